"""BIRCO's published rank files scored with nuggetbench's ``birco`` profile (rank2metric.py).

For each dataset folder ``<data>/birco/<name>/`` with ``test_set.pickle`` and ``ranks/*.pickle``,
reads the split with the restricted unpickler, every rank file as a run, checks it against the
candidate pools, evaluates ``R@5 R@10 R@20 R@100 nDCG@10 RRmax@10 AP`` under ``--profile birco``
and prints ``rank2metric.py --boot True``'s figures: bootstrap mean +/- std (1000 resamples,
``numpy.random.seed(42)``, queries in BIRCO's order), as a Markdown table. Run::

    python benchmarks/birco_ranks.py [--data ../shared/data] [--systems e5_rank Monot5]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data")
    )
    parser.add_argument("--systems", nargs="*", default=["e5_rank", "Monot5"])
    args = parser.parse_args()
    os.environ["NUGGETBENCH_DATA"] = args.data

    from nuggetbench.compare import birco_summary
    from nuggetbench.data.formats.rankfile import check_pools, read_rank_file
    from nuggetbench.datasets import load_dataset
    from nuggetbench.measures import score as evaluate
    from nuggetbench.measures.profiles import BIRCO_MEASURES

    names = sorted(p.parent.name for p in Path(args.data, "birco").glob("*/test_set.pickle"))
    print("| dataset | system | " + " | ".join(BIRCO_MEASURES) + " |")
    print("|---|---|" + "---:|" * len(BIRCO_MEASURES))
    for name in names:
        ds = load_dataset(f"birco/{name}")
        for system in args.systems:
            path = Path(args.data, "birco", name, "ranks", f"{system}.pickle")
            if not path.exists():
                continue
            run = read_rank_file(path)
            check = check_pools(run, ds.doc_filter, on_outside="report")
            res = evaluate(ds.qrels, run, list(BIRCO_MEASURES), profile="birco")
            summary = birco_summary(res, order=list(ds.queries))
            cells = [
                f"{mean:.3f} ± {std:.3f}" for mean, std in (summary[m] for m in BIRCO_MEASURES)
            ]
            flag = "" if check.ok and not check.unranked else " (!)"
            print(f"| {name} | {system}{flag} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
