"""The repository side: the code graph read from git (:mod:`.graph`), Python
symbols and their blobs (:mod:`.symbols`), and where a clone's store lives
(:mod:`.location`)."""
