"""Where a store stands against the migrations this version knows: the one
rule that reads its ``schema_migrations``, for opening a store (to migrate
it, or refuse it as newer or damaged), recognising an earlier version's, and
checking one (:func:`roteiro_memory.check.schema_findings`).  Loaded by
every open, so it holds no more than the rule."""

from __future__ import annotations

from roteiro_memory.errors import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = ["Migration", "Standing", "standing"]


Migration = tuple[int, str, str]
"""A migration as a store's ``MIGRATIONS`` lists it: its version, name and SQL."""


class Standing:
    """What a store's ``schema_migrations`` says of it, against the
    migrations this version knows (:func:`standing`)."""

    __slots__ = ("damage", "newer", "pending", "version")

    def __init__(
        self,
        version: int,
        pending: tuple[Migration, ...] = (),
        newer: tuple[int, ...] = (),
        damage: str | None = None,
    ) -> None:
        self.version = version
        """The schema the store is at: the newest of this version's
        migrations it records (0 for none)."""
        self.pending = pending
        """This version's migrations it does not record yet, in order: what
        opening it applies."""
        self.newer = newer
        """The versions it records past this version's: a newer version's."""
        self.damage = damage
        """Why the rows are no table any version writes, or None."""

    @property
    def current(self) -> bool:
        """Whether the store records exactly this version's migrations."""
        return not (self.pending or self.newer or self.damage)

    @property
    def older(self) -> bool:
        """Whether the store is one an earlier version wrote, which opening
        migrates (and a check judges as migrated)."""
        return self.version > 0 and bool(self.pending) and self.damage is None


def standing(rows: Iterable[Sequence[object]], migrations: Sequence[Migration]) -> Standing:
    """Judge a store's ``schema_migrations`` ``rows`` (version and name, in
    order of version).  Every version applies every migration it knows
    pending, in order, in one transaction, and never edits a released one:
    so a store any version wrote records a first run of this version's
    migrations, by number and name (an older store's, or this version's
    own), or all of them followed by higher versions (a newer one's).
    Anything else -- a gap, another name, a version that is no whole
    number -- no version wrote, so it is :attr:`Standing.damage`, never
    taken for a newer schema."""
    ours = [(version, name) for version, name, _ in migrations]
    versions: list[int] = []
    for at, row in enumerate(rows):
        version, name = row[0], row[1]
        newest = versions[-1] if versions else 0
        if type(version) is not int:
            return Standing(newest, damage=f"holds version {excerpt(version)}, not a whole number")
        said = f"version {version} named {excerpt(name)}"
        if at < len(ours):
            expected, called = ours[at]
            if (version, name) != (expected, called):
                return Standing(
                    newest, damage=f"records {said} where migration {expected} ({called!r}) belongs"
                )
        elif type(name) is not str or version <= newest:
            return Standing(newest, damage=f"records {said} after version {newest}")
        versions.append(version)
    known = versions[: len(ours)]
    return Standing(
        known[-1] if known else 0,
        pending=tuple(migrations[len(known) :]),
        newer=tuple(versions[len(ours) :]),
    )
