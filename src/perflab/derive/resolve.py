"""Which registry metric each printed row label names.

Rows are recognized by label only (never by file name), through the registry's labels and
aliases. Two complications of the published tables are handled here:

* Server blocks prefix a per-server metric with the server's name ("VTAM TOT CPU/CMD (V)",
  "SFS WKSET (V)"): a label that is not a metric itself is tried as <component> <metric>.
* A few labels mean different things in different families of tables ("ITR" is RTM's ITR in
  a CMS table, jobs per CPU-minute in a VSE guest table). Those are settled by the table's
  context: the family most of the table's unambiguous rows belong to.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from perflab.catalog.metric import ANY, CMS, Metric, Registry


@dataclass(frozen=True)
class RowMeaning:
    metric: Metric
    component: str      # "" for table-level rows


def resolve_rows(labels: list[str], registry: Registry) -> tuple[list[RowMeaning | None], str]:
    """The meaning of each label (None: not in the registry) and the table's context."""
    options: list[list[tuple[Metric, str, str]]] = []
    for label in labels:
        # Unprefixed, a table-level metric wins over a per-server one of the same label
        # ("WKSET (V)" alone is the users' working set; "VTAM WKSET (V)" the server's).
        found = sorted(((m, c, "") for m, c in registry.candidates(label)), key=lambda f: f[0].per_component)
        if not found:
            found = _component_candidates(label, registry)
        options.append(found)

    votes: Counter[str] = Counter()
    for found in options:
        contexts = {c for _, c, _ in found}
        if len(contexts) == 1 and ANY not in contexts:
            votes[contexts.pop()] += 1
    ranking = [c for c, _ in votes.most_common()] + [CMS, ANY]

    meanings: list[RowMeaning | None] = []
    for found in options:
        if not found:
            meanings.append(None)
            continue
        chosen = found[0]
        for context in ranking:
            match = [f for f in found if f[1] == context]
            if match:
                chosen = match[0]
                break
        meanings.append(RowMeaning(chosen[0], chosen[2]))
    context = ranking[0] if votes else CMS
    return meanings, context


def _component_candidates(label: str, registry: Registry) -> list[tuple[Metric, str, str]]:
    words = label.split()
    for cut in range(1, len(words)):
        found = registry.candidates(" ".join(words[cut:]), per_component=True)
        if found:
            component = " ".join(words[:cut])
            return [(m, c, component) for m, c in found]
    return []
