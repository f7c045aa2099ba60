"""The base helpers every layer may use and no user imports: atomic writes and path checks
(`fs`), digests, the local object store (`objects`), settings read from the environment,
progress bars, nesting bounds, provenance, the route table, the sandbox, Arrow builders."""
