"""Quick start: how much does tie order move the metrics of a bf16 dense run?

Evaluates all-MiniLM-L6-v2 runs on Cranfield (bundled with tieaware: tieaware.datasets) in fp32 and bf16:
E[M] over all orderings of tied documents, trec_eval's value (oblivious), the
min-max range tie order alone spans, and the bias of trec_eval's number.
"""
import sys
from pathlib import Path

import tieaware
from tieaware.datasets import cranfield
from tieaware.display import text_table

METRICS = ["ndcg@10", "mrr@10", "map@100", "recall@100", "precision@10"]


def main(argv):
    data = cranfield()
    runs = argv or [str(data.runs["fp32"]), str(data.runs["bf16"])]
    for run in runs:
        report = tieaware.evaluate(data.qrels, run, METRICS)
        print(f"\n== {Path(run).name.removesuffix('.gz')}: {report[METRICS[0]].n_queries} queries, "
              f"{report[METRICS[0]].n_queries_with_ties} whose nDCG@10 depends on tie order")
        print(report.table())
        print(text_table(tieaware.census(run, ks=(10, 100)), 3))


if __name__ == "__main__":
    main(sys.argv[1:])
