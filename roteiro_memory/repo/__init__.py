"""The repository side: the code graph read from git (:mod:`.graph`, its nodes
:mod:`.nodes`), which files have symbols and their keys (:mod:`.languages`),
the symbols of a file of any of those languages and their blobs
(:mod:`.symbols`), git's rename detection between two trees
(:mod:`.renames`), the stat cache (:mod:`.statcache`), reading a file that
may be swapped while it is read (:mod:`.regular`), and where a clone's store
lives (:mod:`.location`)."""
