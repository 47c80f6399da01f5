-- The collector's tables (SQLite). Kept in step with ../postgres/ : the same
-- tables, columns and meanings; only the spelling of types differs.
-- Times are milliseconds since the Unix epoch (UTC); hashes and bodies are BLOBs.

CREATE TABLE applications (
    id          INTEGER PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE,
    created_ms  BIGINT  NOT NULL
);

-- Tokens are `smp_<id>_<secret>`; only the SHA-256 of the secret is kept.
CREATE TABLE tokens (
    id              TEXT    PRIMARY KEY,
    application_id  BIGINT  NOT NULL REFERENCES applications (id),
    scope           TEXT    NOT NULL CHECK (scope IN ('ingest', 'read')),
    secret_sha256   BLOB    NOT NULL,
    created_ms      BIGINT  NOT NULL,
    revoked         INTEGER NOT NULL DEFAULT 0
);

-- A build is (application, version, release); runs create it when it is
-- not registered yet, `build add` fills in its files.
CREATE TABLE builds (
    id              INTEGER PRIMARY KEY,
    application_id  BIGINT  NOT NULL REFERENCES applications (id),
    version         TEXT    NOT NULL,
    release         TEXT    NOT NULL,
    registered_ms   BIGINT,
    first_run_ms    BIGINT,
    last_run_ms     BIGINT,
    runs_success    BIGINT  NOT NULL DEFAULT 0,
    runs_error      BIGINT  NOT NULL DEFAULT 0,
    runs_crash      BIGINT  NOT NULL DEFAULT 0,
    UNIQUE (application_id, version, release)
);

-- Every (unit signature, scheme) known, from site tables of registered
-- builds; `sites` is the `<sites>` section's text, stored once.
CREATE TABLE site_tables (
    id              INTEGER PRIMARY KEY,
    unit_signature  TEXT    NOT NULL,
    scheme          TEXT    NOT NULL,
    n_sites         BIGINT  NOT NULL,
    sites           TEXT    NOT NULL,
    UNIQUE (unit_signature, scheme)
);

CREATE TABLE build_site_tables (
    build_id        BIGINT  NOT NULL REFERENCES builds (id),
    site_table_id   BIGINT  NOT NULL REFERENCES site_tables (id),
    PRIMARY KEY (build_id, site_table_id)
);

-- ELF files with debug information, by GNU build id (lowercase hex),
-- gzip-compressed.
CREATE TABLE debug_files (
    gnu_build_id    TEXT    PRIMARY KEY,
    file_name       TEXT    NOT NULL,
    size            BIGINT  NOT NULL,
    data_gz         BLOB    NOT NULL,
    has_dwarf       INTEGER NOT NULL,
    added_ms        BIGINT  NOT NULL
);

CREATE TABLE build_files (
    build_id        BIGINT  NOT NULL REFERENCES builds (id),
    file_name       TEXT    NOT NULL,
    gnu_build_id    TEXT,
    n_site_tables   BIGINT  NOT NULL,
    PRIMARY KEY (build_id, file_name)
);

CREATE TABLE crash_groups (
    id              INTEGER PRIMARY KEY,
    application_id  BIGINT  NOT NULL REFERENCES applications (id),
    signature       TEXT    NOT NULL,
    frames_json     TEXT    NOT NULL,
    first_seen_ms   BIGINT  NOT NULL,
    last_seen_ms    BIGINT  NOT NULL,
    runs            BIGINT  NOT NULL DEFAULT 0,
    UNIQUE (application_id, signature)
);

CREATE TABLE crash_group_builds (
    crash_group_id  BIGINT  NOT NULL REFERENCES crash_groups (id),
    build_id        BIGINT  NOT NULL REFERENCES builds (id),
    runs            BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (crash_group_id, build_id)
);

-- One row per uploaded run. `counters` is the compact sparse form of its
-- samples (ARCHITECTURE.md, "The collector's storage"); the raw report is in
-- run_subreports. `symbolized`: 0 not yet (a crash whose debug files have
-- not arrived), 1 done, NULL nothing to symbolize.
CREATE TABLE runs (
    id                  INTEGER PRIMARY KEY,
    run_id              TEXT    NOT NULL UNIQUE,
    report_id           TEXT    UNIQUE,
    application_id      BIGINT  NOT NULL REFERENCES applications (id),
    build_id            BIGINT  NOT NULL REFERENCES builds (id),
    received_ms         BIGINT  NOT NULL,
    sampler_version     TEXT,
    executable_path     TEXT,
    instrumentor_version TEXT,
    build_distribution  TEXT,
    sparsity            BIGINT,
    exit_status         INTEGER NOT NULL,
    exit_signal         INTEGER NOT NULL,
    outcome             TEXT    NOT NULL CHECK (outcome IN ('success', 'error', 'crash')),
    counters            BLOB    NOT NULL,
    report_bytes        BIGINT  NOT NULL,
    symbolized          INTEGER,
    backtrace_json      TEXT,
    crash_group_id      BIGINT  REFERENCES crash_groups (id)
);
CREATE INDEX runs_by_application ON runs (application_id, id);
CREATE INDEX runs_by_build ON runs (build_id, id);
CREATE INDEX runs_by_group ON runs (crash_group_id, id);
CREATE INDEX runs_to_symbolize ON runs (application_id, symbolized);

-- Each subreport as uploaded: the gzip bytes of its text.
CREATE TABLE run_subreports (
    run_id          BIGINT  NOT NULL REFERENCES runs (id),
    position        INTEGER NOT NULL,
    name            TEXT    NOT NULL,
    size            BIGINT  NOT NULL,
    data_gz         BLOB    NOT NULL,
    PRIMARY KEY (run_id, position)
);

-- Per build, per (unit, scheme): in how many runs of each outcome its
-- section was present; updated at ingest.
CREATE TABLE build_section_totals (
    build_id        BIGINT  NOT NULL REFERENCES builds (id),
    unit_signature  TEXT    NOT NULL,
    scheme          TEXT    NOT NULL,
    runs_success    BIGINT  NOT NULL DEFAULT 0,
    runs_error      BIGINT  NOT NULL DEFAULT 0,
    runs_crash      BIGINT  NOT NULL DEFAULT 0,
    PRIMARY KEY (build_id, unit_signature, scheme)
);
