-- The source files a build's site tables name, registered with
-- `build add --sources`, for the dashboard's source lines. `path` is the
-- file as the compiler saw it (the site tables' spelling); the text is
-- gzip-compressed. Kept in step with ../postgres/.
CREATE TABLE build_sources (
    build_id        BIGINT  NOT NULL REFERENCES builds (id),
    path            TEXT    NOT NULL,
    size            BIGINT  NOT NULL,
    data_gz         BLOB    NOT NULL,
    PRIMARY KEY (build_id, path)
);
