"""``roteiro-memory reanchor``: where the code of stale records is now, and
``--apply`` to re-anchor them there."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.reanchor import Proposals, Rewritten
    from roteiro_memory.app.session import Session

SUMMARY = "where the code of drifted and vanished records is now; --apply re-anchors them there"
EXAMPLE = "roteiro-memory reanchor && roteiro-memory reanchor --apply 12"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "id",
        metavar="ID",
        nargs="*",
        help="only these records (default: every live record whose anchor drifted or vanished)",
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="re-anchor the records named to their proposed nodes: a superseding record each",
    )
    parser.add_argument(
        "--all-certain",
        action="store_true",
        help="re-anchor every record whose code moved unchanged (a certain proposal)",
    )
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import reanchor
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    if args.apply or args.all_certain:
        written = reanchor.apply(session, args.id, all_certain=args.all_certain)
        if args.json:
            emit(written.to_json())
        else:
            say(written_text(written, "nothing re-anchored: no proposal is certain"))
        return ExitCode.OK if written.written else ExitCode.NOTHING
    found = reanchor.proposals(session, args.id)
    if args.json:
        emit(found.to_json())
    else:
        say(_table(found))
    return ExitCode.OK if found.proposals else ExitCode.NOTHING


def written_text(written: Rewritten, empty: str) -> str:
    """One line per superseding record: what it replaced, where it is anchored."""
    from roteiro_memory.cli import render

    lines = []
    for item in written.written:
        record = item.record
        assert record.anchor is not None
        verb = "re-anchored" if item.action == "move" else "confirmed"
        lines.append(
            f"{verb} {item.supersedes} as {record.id} at {render.anchor_label(record.anchor.key)} "
            f"({render.state_label(record.anchor_state)}), superseding {item.supersedes}"
        )
    return "\n".join(lines) or empty


def _table(found: Proposals) -> str:
    from roteiro_memory.app.reanchor import CERTAIN, evidence_text, proposal_text
    from roteiro_memory.cli import render

    def quote(path: str) -> str:
        """A path git gave, on the row's one line: a newline in it escaped."""
        return render.printable(path, one_line=True)

    label = render.anchor_label

    rows = []
    for proposal in found.proposals:
        record = proposal.record
        rows.append(
            [
                str(record.id),
                render.state_label(record.anchor_state),
                render.anchor_label(record.anchor.key if record.anchor else None),
                proposal_text(proposal, label),
                "; ".join(
                    evidence_text(item, proposal.to, label, quote) for item in proposal.evidence
                )
                or "-",
            ]
        )
    noun = "record" if len(rows) == 1 else "records"
    if not rows:
        return "0 records: no live record's anchor drifted or vanished"
    out = render.table(["ID", "STATE", "ANCHOR", "PROPOSAL", "EVIDENCE"], rows, right=(0,))
    moves = [str(p.record.id) for p in found.proposals if p.movable]
    confirms = [str(p.record.id) for p in found.proposals if p.action == "confirm"]
    certain = sum(1 for p in found.proposals if p.movable and p.certainty == CERTAIN)
    said = [f"{len(rows)} {noun}"]
    if moves:
        every = f" (or --all-certain for the {certain} certain)" if certain else ""
        said.append(f"follow the code: roteiro-memory reanchor --apply {' '.join(moves)}{every}")
    if confirms:
        they = "it still holds" if len(confirms) == 1 else "they still hold"
        said.append(
            f"after reading the code, if {they}: roteiro-memory confirm {' '.join(confirms)}"
        )
    return f"{out}\n" + "; ".join(said)
