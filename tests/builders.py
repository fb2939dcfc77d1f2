"""Test inputs built the ways users build them (not tests: imported by test modules)."""
import ranx


def unicode_keyed_run(run: dict) -> ranx.Run:
    """A ranx Run whose inner dicts have unicode keys, as ``add_score`` and ``ranx.fuse`` build them
    (``Run(dict)`` builds fixed-width UnicodeCharSeq keys)."""
    out = ranx.Run()
    for qid, docs in run.items():
        for doc, score in docs.items():
            out.add_score(qid, doc, score)
    return out
