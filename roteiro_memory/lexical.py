"""The lexical ranking arm of ``memory.search``, as pure rules with no I/O.

Three rules, each one definition that every store computes the same way:

* the **tokenizer** -- how a body, an anchor key, an anchor path and a query
  become terms (:class:`Tokenizer`, the chosen switches in :data:`TOKENIZER`);
* **relevance** -- Okapi BM25 with the constants of :data:`BM25`, statistics
  taken over the live records of the whole store (:class:`CorpusStats`),
  summed over the distinct query terms in code-point order so every backend
  adds the same doubles in the same order;
* the **combination** with the ADR-0013 evidence, the writer's confidence
  tempered to its seven-eighths power --
  ``score = relevance * (base ** (7/8) * anchor_penalty * decay_factor)``, the
  power taken by square roots
  (:func:`search_evidence`, :func:`combine`), ties going to the newest id
  (:func:`search_key`).

A record is a candidate exactly when it holds at least one query term, so its
relevance is positive (every IDF is); evidence then only demotes it.  A SQL
store keeps a term table and reads these constants; it never restates them.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from roteiro_memory import arguments
from roteiro_memory import semantics as sem
from roteiro_memory.stemming import STEM_RULES, stem
from roteiro_memory.valueclass import valueclass

__all__ = [
    "BM25",
    "IDF_SMOOTHING",
    "MAX_QUERY_TERMS",
    "SEARCH_SCHEMA",
    "STEM_RULES",
    "STOP_WORDS",
    "SWITCHES",
    "TOKENIZER",
    "Bm25",
    "CorpusStats",
    "Document",
    "Ranked",
    "Tokenizer",
    "combine",
    "document_terms",
    "idf",
    "idf_argument",
    "query_terms",
    "rank",
    "relevance",
    "search_confidence",
    "search_evidence",
    "search_key",
    "stem",
    "term_weight",
    "weigh",
    "weigh_postings",
    "word_parts",
]

SEARCH_SCHEMA = "roteiro.search/v1"
"""The schema a ``memory.search`` result names."""


# --- The tokenizer -------------------------------------------------------------

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again all am an and any are as at be been before being
    below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers him his how i if in
    into is it its itself just me more most my no nor not now of off on once
    only or other our ours out over own same she should so some such than that
    the their theirs them then there these they this those through to too under
    until up very was we were what when where which while who whom why will
    with would you your yours
    """.split()  # noqa: SIM905 -- a word list reads better as prose than as 120 quoted strings
)
"""English function words dropped when :attr:`Tokenizer.stop_words` is on.
Lower-case; a token is compared after folding."""


def _is_word_char(char: str) -> bool:
    """Letters, marks and numbers (Unicode general categories L*, M*, N*)."""
    return unicodedata.category(char)[0] in "LMN"


_ASCII_WORDS = re.compile("[A-Za-z0-9]+")
"""Runs of word characters in ASCII text: its only letters, marks and numbers
are these (most of what is stored is ASCII, and a pattern reads it at C speed)."""
_ASCII_NON_SPACE = re.compile("[^\t\n\v\f\r ]+")
"""Runs of non-White_Space characters in ASCII text."""


def _chunks(text: str, split_punctuation: bool) -> list[str]:
    """Maximal runs of word characters, or of non-White_Space characters."""
    if text.isascii():
        return (_ASCII_WORDS if split_punctuation else _ASCII_NON_SPACE).findall(text)
    out: list[str] = []
    word: list[str] = []
    for char in text:
        keep = _is_word_char(char) if split_punctuation else char not in sem.WHITE_SPACE
        if keep:
            word.append(char)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


CONNECTORS = frozenset("_-")
"""The characters that join words into one identifier (``get_hookimpls``,
``hook-caller``): they separate terms, and an identifier's joined form is
kept besides its parts."""

_ASCII_PIECES = bytes(
    b if b < 0x80 and (_is_word_char(chr(b)) or chr(b) in CONNECTORS) else 0x20 for b in range(256)
)
"""Keeps ASCII word characters and connectors; any other byte becomes a space."""


def _ascii_pieces(text: str) -> list[bytes]:
    """ASCII ``text``'s runs of word characters and connectors, at C speed:
    each holds one identifier at most, the run less the connectors at its ends."""
    return text.encode("ascii").translate(_ASCII_PIECES).split()


def _identifiers(text: str) -> list[str]:
    """The identifiers of ``text``, in order: maximal runs of word characters
    and the connectors between them (a connector at either end belongs to no
    identifier), each as it is written."""
    if text.isascii():
        ends = "".join(CONNECTORS)
        return [found for piece in _ascii_pieces(text) if (found := piece.decode().strip(ends))]
    return _identifiers_by_character(text)


def _identifiers_by_character(text: str) -> list[str]:
    """:func:`_identifiers` for any text, one character at a time."""
    out: list[str] = []
    start = end = -1  # the identifier being read, text[start:end]
    for i, char in enumerate(text):
        if _is_word_char(char):
            if start < 0:
                start = i
            elif end < i and not all(c in CONNECTORS for c in text[end:i]):
                out.append(text[start:end])
                start = i
            end = i + 1
        elif char not in CONNECTORS and start >= 0:
            out.append(text[start:end])
            start = end = -1
    if start >= 0:
        out.append(text[start:end])
    return out


@functools.lru_cache(maxsize=1 << 16)
def word_parts(word: str, case: bool = True, digits: bool = True) -> tuple[str, ...]:
    """``word`` cut where an identifier's words meet: with ``case``, before an
    ``Lu`` letter that follows an ``Ll`` one (``cacheSweep``) and before the
    last ``Lu`` of a run followed by an ``Ll`` (``HTTPServer``); with
    ``digits``, before an ``Lu`` letter that follows a number (``N*``), so a
    digit ends a word as a lower-case letter does (``Utf8Decoder`` gives
    ``Utf8`` and ``Decoder``; ``utf8`` and ``sha256`` stay whole, and a
    query's pairs meet them: ``utf 8`` gives ``utf8``).  Categories are
    Unicode general categories."""
    if word.islower():
        return (word,)  # every cut is before an Lu letter, and a lower-case word has none
    categories = [unicodedata.category(char) for char in word]
    parts: list[str] = []
    start = 0
    for i in range(1, len(word)):
        before, here = categories[i - 1], categories[i]
        after = categories[i + 1] if i + 1 < len(word) else ""
        cut = case and here == "Lu" and (before == "Ll" or (before == "Lu" and after == "Ll"))
        if digits and not cut:
            cut = here == "Lu" and before[0] == "N"
        if cut:
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return tuple(parts)


@valueclass
class Tokenizer:
    """How text becomes terms.  Each switch is one step, applied in this order:

    1. ``split_punctuation``: terms are maximal runs of letters, marks and
       numbers, so ``.``, ``_``, ``::``, ``/``, ``-`` and quotes all split;
       off, terms are maximal runs of non-White_Space characters.
    2. ``split_case`` and ``split_digits``: each term is split again where
       camelCase changes case, and before a capital that follows a digit
       (:func:`word_parts`).
    3. ``keep_joined``: an identifier of two or more parts -- words joined by
       ``_`` or ``-``, each split by step 2 -- also gives its parts joined
       (``get_hookimpls`` gives ``get``, ``hookimpls`` and ``gethookimpls``),
       so the identifier as written still matches itself best.
    4. ``fold_case``: each term is lower-cased (``str.lower``).
    5. ``stop_words``: terms in :data:`STOP_WORDS` are dropped.
    6. ``stem``: each term goes through :func:`stem`.

    ``join_query`` is for queries only (:func:`query_terms`): two identifiers
    next to each other, neither a stop word, also give their joined forms run
    together, so ``hook caller`` meets ``HookCaller``.
    """

    split_punctuation: bool = True
    split_case: bool = True
    split_digits: bool = True
    keep_joined: bool = True
    join_query: bool = True
    fold_case: bool = True
    stop_words: bool = True
    stem: bool = True

    @property
    def name(self) -> str:
        """The switches that are on, joined by ``+`` (``raw`` when none is)."""
        names = [name for name, field_name in SWITCHES.items() if getattr(self, field_name)]
        return "+".join(names) or "raw"

    def terms(self, text: str) -> tuple[str, ...]:
        """The terms of ``text``, in order, repeats kept."""
        return _terms(text, self)


SWITCHES: dict[str, str] = {
    "punct": "split_punctuation",
    "case": "split_case",
    "digit": "split_digits",
    "joined": "keep_joined",
    "pairs": "join_query",
    "fold": "fold_case",
    "stop": "stop_words",
    "stem": "stem",
}
"""Each :class:`Tokenizer` switch by the short name a tokenizer's name uses."""


def _terms(text: str, tokenizer: Tokenizer) -> tuple[str, ...]:
    global _LAST
    last = _LAST  # read once: another thread may replace it
    if last is not None and last[0] is tokenizer:
        return last[1](text)
    tokenize = _TOKENIZE.get(tokenizer)
    if tokenize is None:
        tokenize = _TOKENIZE[tokenizer] = _tokenize(tokenizer)
    _LAST = (tokenizer, tokenize)
    return tokenize(text)


_TOKENIZE: dict[Tokenizer, Callable[[str], tuple[str, ...]]] = {}
"""Each tokenizer's :func:`_tokenize`, made on first use."""
_LAST: tuple[Tokenizer, Callable[[str], tuple[str, ...]]] | None = None
"""The tokenizer :func:`_terms` was last given, and its :func:`_tokenize`: the
same object is known again by identity, not by hashing its fields (which
costs more than a short text's terms)."""

_flat = itertools.chain.from_iterable

_CHUNK_MEMO = 1 << 16
"""Most chunks a tokenizer remembers; the memo is emptied when it fills."""


def _units(text: str, tokenizer: Tokenizer) -> list[str]:
    """Step 1: the pieces of ``text`` every later step acts on one at a
    time -- its identifiers when joined forms are kept, else its chunks."""
    if tokenizer.split_punctuation and tokenizer.keep_joined:
        return _identifiers(text)
    return _chunks(text, tokenizer.split_punctuation)


def _tokenize(tokenizer: Tokenizer) -> Callable[[str], tuple[str, ...]]:
    """``tokenizer``'s terms of a text.  Every step after the first acts on
    one piece at a time (an identifier, or a chunk), so each distinct piece
    is worked out once (:func:`_unit_terms`, remembered: a store's words
    repeat far more than they vary) and a text's terms are its pieces' terms
    in order.  ASCII text that is folded and not split by case is
    lower-cased first: the same terms, from fewer distinct pieces; ASCII text
    cut into identifiers is cut into :func:`_ascii_pieces` (their bytes) instead."""
    memo: dict[str | bytes, tuple[str, ...]] = {}
    # Only when no step cuts by case: a digit's cut is before a capital too.
    lower_first = tokenizer.fold_case and not (tokenizer.split_case or tokenizer.split_digits)
    by_identifier = tokenizer.split_punctuation and tokenizer.keep_joined

    def terms(text: str) -> tuple[str, ...]:
        if lower_first and text.isascii():
            text = text.lower()
        ascii_pieces = by_identifier and text.isascii()
        units: list[str] | list[bytes] = (
            _ascii_pieces(text) if ascii_pieces else _units(text, tokenizer)
        )
        try:
            return tuple(_flat(map(memo.__getitem__, units)))
        except KeyError:
            if len(memo) > _CHUNK_MEMO:
                memo.clear()
            for unit in units:
                if unit not in memo:  # a piece's terms are its identifier's
                    plain = unit.decode() if isinstance(unit, bytes) else unit
                    memo[unit] = _unit_terms(plain, tokenizer)
            return tuple(_flat(map(memo.__getitem__, units)))

    return terms


def _parts(unit: str, tokenizer: Tokenizer) -> list[str]:
    """Step 2 over one piece: its words (an identifier's runs of word
    characters), each cut by :func:`word_parts` when a split is on."""
    words = _chunks(unit, True) if tokenizer.split_punctuation and tokenizer.keep_joined else [unit]
    if not (tokenizer.split_case or tokenizer.split_digits):
        return words
    return [
        part
        for word in words
        for part in word_parts(word, tokenizer.split_case, tokenizer.split_digits)
    ]


def _unit_terms(unit: str, tokenizer: Tokenizer) -> tuple[str, ...]:
    """The terms one piece gives, by the steps after the first, in the
    Tokenizer's order."""
    terms = _parts(unit, tokenizer)
    if tokenizer.keep_joined and len(terms) > 1:
        terms.append("".join(terms))
    return _finish(terms, tokenizer)


def _finish(terms: list[str], tokenizer: Tokenizer) -> tuple[str, ...]:
    """Steps 4 to 6 over ``terms``."""
    if tokenizer.fold_case:
        terms = [term.lower() for term in terms]
    if tokenizer.stop_words:
        terms = [term for term in terms if term.lower() not in STOP_WORDS]
    if tokenizer.stem:
        terms = [stem(term) for term in terms]
    return tuple(terms)


TOKENIZER = Tokenizer()
"""The tokenizer ``memory.search`` uses, chosen by measurement (``docs/eval.md``,
"The tokenizer decision"): punctuation split, camelCase split (a digit ending
a word as a lower-case letter does), an identifier's joined form kept after
its parts, neighbouring query identifiers also joined, case folded, stop
words dropped, stemmed."""


def document_terms(
    body: str,
    anchor_key: str | None,
    anchor_path: str | None,
    tokenizer: Tokenizer = TOKENIZER,
) -> tuple[str, ...]:
    """A record's terms: those of its body, then of its anchor key, then of its
    captured anchor path, each tokenized on its own so no term spans two of
    them.  Scope is not searched, as in ``memory.recall``."""
    if not (anchor_key or anchor_path):
        return tokenizer.terms(body)
    # A line break splits terms under every tokenizer (it is White_Space and
    # no letter, mark or number), so the parts joined by one are tokenized
    # at once, each on its own.
    return tokenizer.terms("\n".join(part for part in (body, anchor_key, anchor_path) if part))


# --- Relevance -----------------------------------------------------------------


@valueclass
class Bm25:
    """The two Okapi BM25 constants: ``k1`` saturates term frequency, ``b``
    sets how much a long record is normalised against the average length."""

    k1: float = 1.2
    b: float = 0.75


BM25 = Bm25()
"""The constants ``memory.search`` uses."""

IDF_SMOOTHING = 0.5
"""Added to both counts inside the IDF, so a term in every record keeps a
positive weight: ``ln(1 + (N - n + 0.5) / (n + 0.5)) > 0`` whenever n <= N."""


@valueclass
class Document:
    """One record as the ranking sees it: its id and its terms."""

    id: int
    terms: tuple[str, ...]

    @functools.cached_property
    def counts(self) -> Mapping[str, int]:
        """How often each term occurs (computed once, not a field)."""
        return Counter(self.terms)

    @property
    def length(self) -> int:
        """The record's length in terms, repeats counted."""
        return len(self.terms)


@valueclass
class CorpusStats:
    """What relevance is normalised by: counted over every live record of the
    store, whatever the search's filters, so a record's relevance does not
    depend on which other records a filter hides."""

    documents: int
    total_terms: int
    document_frequency: Mapping[str, int]

    @classmethod
    def of(cls, documents: Iterable[Document]) -> CorpusStats:
        count = 0
        total = 0
        frequency: Counter[str] = Counter()
        for document in documents:
            count += 1
            total += document.length
            frequency.update(document.counts.keys())
        return cls(count, total, dict(frequency))

    @property
    def average_length(self) -> float:
        """``total_terms / documents`` as a double division (0.0 when empty)."""
        return float(self.total_terms) / float(self.documents) if self.documents else 0.0


def idf(frequency: int, documents: int) -> float:
    """``ln(1 + (N - n + 0.5) / (n + 0.5))`` for a term in ``n`` of ``N`` records."""
    return math.log(idf_argument(frequency, documents))


def term_weight(
    count: float, length: float, average_length: float, term_idf: float, params: Bm25 = BM25
) -> float:
    """One term's share: ``idf * (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * (dl / avgdl)))``,
    evaluated in exactly that grouping.  Search passes whole counts; the
    evaluation's scoring variants also pass weighted ones (BM25F, BM25TP)."""
    tf = float(count)
    norm = params.k1 * (1.0 - params.b + params.b * (float(length) / average_length))
    return term_idf * ((tf * (params.k1 + 1.0)) / (tf + norm))


MAX_QUERY_TERMS = 1024
"""The most distinct terms a search query may hold.  A search's cost grows
with its distinct terms (each is looked up, and each one records hold is
scored), so a query beyond this is refused whole rather than cut short."""


_WHITE_SPACE_RUNS = re.compile("[" + re.escape("".join(sorted(sem.WHITE_SPACE))) + "]+")
"""Runs of White_Space characters: no piece of any tokenizer spans one."""


def query_terms(query: str, tokenizer: Tokenizer = TOKENIZER) -> tuple[str, ...]:
    """The distinct terms of a query in code-point order: the order relevance
    sums them in.  A repeated query word counts once.  With ``join_query``,
    each two neighbouring identifiers that are not stop words also give
    their words run together (``hook impls`` gives ``hookimpls``).  A query
    of more than :data:`MAX_QUERY_TERMS` distinct terms is refused
    (BadRequest).

    No piece a tokenizer works on spans White_Space, so the query's words
    (split there) are tokenized once each, however often they repeat: a
    query's cost follows its distinct words, not its length.  A query that
    is not text is BadRequest."""
    arguments.text(query, "query")
    if tokenizer.split_punctuation and query.isascii():
        # str.split also splits at U+001C..U+001F, which split every piece too.
        words = query.split()
    else:
        words = [word for word in _WHITE_SPACE_RUNS.split(query) if word]
    distinct_words = list(dict.fromkeys(words))
    distinct: set[str] = set()
    for start in range(0, len(distinct_words), _QUERY_WORDS_AT_ONCE):
        batch = distinct_words[start : start + _QUERY_WORDS_AT_ONCE]
        distinct.update(tokenizer.terms(" ".join(batch)))
        if len(distinct) > MAX_QUERY_TERMS:
            raise _beyond_the_cap()
    if tokenizer.join_query:
        # Distinct pairs only go through the last steps: a long query repeats them.
        distinct.update(_finish(_pairs(words, distinct_words, tokenizer), tokenizer))
        if len(distinct) > MAX_QUERY_TERMS:
            raise _beyond_the_cap()
    return tuple(sorted(distinct))


_QUERY_WORDS_AT_ONCE = 256
"""Distinct query words tokenized together: a query past the cap is refused
once the words read so far give more than :data:`MAX_QUERY_TERMS` terms, so
refusing costs about the cap's worth of words, not the whole query's."""


def _beyond_the_cap() -> Exception:
    """The refusal of a query of more than :data:`MAX_QUERY_TERMS` distinct
    terms.  It names the cap, not the query's count: the words after the
    cap was passed are never tokenized, so that count is not known."""
    from roteiro_memory.errors import BadRequest

    return BadRequest(
        f"the search query holds more than {MAX_QUERY_TERMS:,} distinct terms; a search takes "
        f"at most {MAX_QUERY_TERMS:,}: search for fewer words (repeated words count once)"
    )


def _pairs(words: list[str], distinct_words: Iterable[str], tokenizer: Tokenizer) -> list[str]:
    """Each two neighbouring identifiers of the query whose White_Space-split
    ``words`` these are, neither a stop word when lower-cased, as one word:
    their words run together.  Each distinct pair once."""
    units = {word: _units(word, tokenizer) for word in distinct_words}
    joined = {unit: "".join(_parts(unit, tokenizer)) for held in units.values() for unit in held}
    neighbours: dict[tuple[str, str], None] = {}
    for held in units.values():  # the pairs inside one word
        neighbours.update(dict.fromkeys(itertools.pairwise(held)))
    # A word with no identifier (punctuation alone) separates none.
    spoken = words if all(units.values()) else [word for word in words if units[word]]
    for first, second in dict.fromkeys(itertools.pairwise(spoken)):
        neighbours[units[first][-1], units[second][0]] = None
    out = []
    for first, second in neighbours:
        one, other = joined[first], joined[second]
        if one.lower() not in STOP_WORDS and other.lower() not in STOP_WORDS:
            out.append(one + other)
    return out


def relevance(
    terms: Sequence[str], document: Document, stats: CorpusStats, params: Bm25 = BM25
) -> float:
    """BM25 of ``document`` for the distinct, sorted ``terms``: the term
    weights of the terms it holds, added left to right starting from 0.0.
    0.0 exactly when it holds none of them."""
    return weigh(terms, document.counts, document.length, stats, params)


def weigh(
    terms: Sequence[str],
    counts: Mapping[str, int],
    length: int,
    stats: CorpusStats,
    params: Bm25 = BM25,
    idfs: Mapping[str, float] | None = None,
) -> float:
    """:func:`relevance` from a record's term counts and length, as a store's
    term index holds them: :func:`weigh_postings` of this one record.
    ``idfs``, when given, is the idf of each term to use instead of
    :func:`idf`'s (worked out once for a search's many records, or each value
    a faithful ``ln`` may give, for a checker)."""
    held = [(term, ((0, counts[term], length),)) for term in terms if counts.get(term, 0)]
    return weigh_postings(held, stats, params, idfs).get(0, 0.0)


Postings = Iterable[tuple[int, int, int]]
"""One term's postings: ``(record id, count, length)``."""


def weigh_postings(
    postings: Iterable[tuple[str, Postings]],
    stats: CorpusStats,
    params: Bm25 = BM25,
    idfs: Mapping[str, float] | None = None,
    weights: dict[str, dict[tuple[int, int], float]] | None = None,
) -> dict[int, float]:
    """The relevance of every record the postings name, by id, from each
    query term's postings in code-point order of the terms: a record's value
    is its term weights added in that order, starting from 0.0, whichever
    records are weighed with it.  ``weights`` remembers each term's weight
    by ``(count, length)`` across calls (the same doubles, worked out once)."""
    average = stats.average_length
    totals: dict[int, float] = {}
    get = totals.get
    for term, rows in postings:
        known = {} if weights is None else weights.setdefault(term, {})
        if idfs is None:
            term_idf = idf(stats.document_frequency[term], stats.documents)
        else:
            term_idf = idfs[term]
        for record_id, count, length in rows:
            share = known.get((count, length))
            if share is None:
                share = known[count, length] = term_weight(count, length, average, term_idf, params)
            totals[record_id] = get(record_id, 0.0) + share
    return totals


def idf_argument(frequency: int, documents: int) -> float:
    """What :func:`idf` takes the ``ln`` of: ``1 + (N - n + 0.5) / (n + 0.5)``,
    every operation a double one."""
    n, big_n = float(frequency), float(documents)
    return 1.0 + (big_n - n + IDF_SMOOTHING) / (n + IDF_SMOOTHING)


def search_confidence(base: float) -> float:
    """A base confidence as search weighs it: ``base ** (7/8)``, computed as
    ``(r2 * r4) * r8`` with ``r2 = sqrt(base)``, ``r4 = sqrt(r2)``, ``r8 =
    sqrt(r4)`` -- square roots are exact IEEE operations, so every language
    and database gives the same double.

    Relevance already measures how well a record answers a query; the
    writer's confidence tilts between records that answer about as well
    without overturning a clear lead (0.6 against 0.95 trails by 1.49x, not
    1.58x).  Chosen by measurement (``docs/eval.md``, "Beyond one-shot
    BM25").  Monotone, 0 at 0 and 1 at 1, so it still demotes, never
    promotes past relevance, and a stated 0 still scores 0."""
    r2 = math.sqrt(base)
    r4 = math.sqrt(r2)
    return r2 * r4 * math.sqrt(r4)


def search_evidence(base: float, penalty: float, decay_factor: float) -> float:
    """The evidence a search multiplies relevance by: the ADR-0013 recall
    score with the base confidence tempered (:func:`search_confidence`),
    multiplied left to right as recall multiplies it.  At most 1."""
    return search_confidence(base) * penalty * decay_factor


def combine(relevance_value: float, evidence: float) -> float:
    """The search score: relevance times :func:`search_evidence`."""
    return relevance_value * evidence


def search_key(score_value: float, record_id: int) -> tuple[float, int]:
    """Sort key for search: best score first, ties to the newest id (ascending sort)."""
    return sem.rank_key(score_value, record_id)


@valueclass
class Ranked:
    """One candidate of :func:`rank`: its id and relevance."""

    id: int
    relevance: float


def rank(
    query: str,
    documents: Sequence[Document],
    candidates: Iterable[int] | None = None,
    tokenizer: Tokenizer = TOKENIZER,
    params: Bm25 = BM25,
) -> list[Ranked]:
    """The reference lexical ranking: statistics over ``documents`` (the live
    records), candidates those of ``candidates`` (default: all) holding any
    query term, best relevance first, ties to the newest id."""
    terms = query_terms(query, tokenizer)
    stats = CorpusStats.of(documents)
    allowed = None if candidates is None else set(candidates)
    out = []
    for document in documents:
        if allowed is not None and document.id not in allowed:
            continue
        value = relevance(terms, document, stats, params)
        if value > 0.0:
            out.append(Ranked(document.id, value))
    out.sort(key=lambda r: search_key(r.relevance, r.id))
    return out
