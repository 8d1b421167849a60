"""`perflab bisect`: where in an ordered list of versions (releases through the release cache, or
git revisions built by a command) a study's primary metric changed -- about log2(n) studies of two
versions each, and what INCONCLUSIVE steps need (docs/history.md, "Bisect")."""
