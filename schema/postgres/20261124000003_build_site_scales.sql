-- The scale each site of a build was built with (`sampler-cc
-- -fsampler-rates`, the binaries' `.debug_site_scales`; issue 19), per
-- (unit, scheme): `scales` is one decimal scale per line, site i on line
-- i + 1. A unit's site table is shared by every build with its signature,
-- but its scales belong to the build: a unit rebuilt unchanged with rates
-- keeps its table and gets new scales. A (build, unit, scheme) without a
-- row has scale 1 everywhere. Kept in step with ../sqlite/.
CREATE TABLE build_site_scales (
    build_id        BIGINT  NOT NULL REFERENCES builds (id),
    unit_signature  TEXT    NOT NULL,
    scheme          TEXT    NOT NULL,
    scales          TEXT    NOT NULL,
    PRIMARY KEY (build_id, unit_signature, scheme)
);
