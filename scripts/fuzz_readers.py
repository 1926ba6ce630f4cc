"""The long fuzz run of every reader: the strategies and demands of the CI fuzz tests
(tests/fuzz_cases.py), run for many more cases with a seed of your choice.

    .venv/bin/python scripts/fuzz_readers.py [--bvh-cases 10000] [--json-cases 2000]
        [--checkpoint-cases 1000] [--journal-cases 1000] [--seed 1]

Prints, per reader and kind of input, the cases run, how many loaded and how many were refused with
the reader's own error, and the time; on the first case that breaks a demand (another exception, a
message not naming the file, a hang, too much memory, a loaded file that is not sound) Hypothesis
shrinks it, the script prints it and exits 1. Exit 0: every case ended as the readers promise.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import gzip  # noqa: E402

import fuzz_cases as fc  # noqa: E402
import fuzz_documents as fd  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import seed as hypothesis_seed  # noqa: E402

# The shares of the BVH cases each kind of input gets.
BVH_SHARES = {"byte mutations": 0.35, "token mutations": 0.35, "gzip byte mutations": 0.1, "generated hierarchies": 0.2}


def run_kind(name: str, strategy, check, cases: int, seed: int, table: list) -> bool:
    """Run `check(case) -> outcome` on `cases` cases; a row in `table`; False after a broken demand."""
    outcomes: Counter = Counter()

    @hypothesis_seed(seed)
    @settings(max_examples=cases, database=None, deadline=None, print_blob=True,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def fuzz(case):
        outcomes[check(case)] += 1

    started = time.perf_counter()
    ok = True
    try:
        fuzz()
    except BaseException as failure:  # Hypothesis has shrunk it and printed the case
        print(f"\n{name}: BROKEN DEMAND: {failure}", file=sys.stderr)
        ok = False
    seconds = time.perf_counter() - started
    total = sum(outcomes.values())
    table.append((name, total, outcomes.get("loaded", 0), outcomes.get("refused", 0), seconds))
    print(f"{name:<32} {total:>6} cases  {outcomes.get('loaded', 0):>6} loaded  {outcomes.get('refused', 0):>6} "
          f"refused  {seconds:7.1f} s", flush=True)
    return ok


def bvh_kinds(folder: Path) -> list:
    seeds = fc.bvh_seeds()
    packed = [gzip.compress(s, mtime=0) for s in seeds]
    return [
        ("BVH byte mutations", fc.byte_mutation(seeds), lambda data: fc.check_bvh(data, folder), BVH_SHARES["byte mutations"]),
        ("BVH token mutations", fc.token_mutation(seeds), lambda data: fc.check_bvh(data, folder),
         BVH_SHARES["token mutations"]),
        ("BVH gzip byte mutations", fc.byte_mutation(packed),
         lambda data: fc.check_bvh(data, folder, name="case.bvh.gz"), BVH_SHARES["gzip byte mutations"]),
        ("BVH generated hierarchies", fc.generated_bvh(),
         lambda case: fc.check_bvh(case.text.encode("utf-8"), folder, case), BVH_SHARES["generated hierarchies"]),
    ]


def json_kinds(folder: Path) -> list:
    import test_fuzz_json as docs

    return [("JSON drive scripts", fd.json_text_mutation(docs.SCRIPTS), lambda d: docs.check_script(d, folder)),
            ("JSON edit lists", fd.json_text_mutation(docs.EDITS), lambda d: docs.check_edit_list(d, folder)),
            ("JSON labels tables", fd.json_text_mutation(docs.LABELS), lambda d: docs.check_labels(d, folder))]


def checkpoint_kind(folder: Path):
    from conftest import make_random_checkpoint
    from test_fuzz_checkpoint import check_checkpoint

    from pfnn_core.motion import bvh

    seed_path = make_random_checkpoint(bvh.load(fc.REAL_CLIP), folder / "seed.safetensors", hidden_size=8)

    return fd.checkpoint_mutation(seed_path.read_bytes()), lambda data: check_checkpoint(data, folder)


def journal_kind(folder: Path):
    from test_journal import frame

    from pfnn_core.motion import bvh, journal
    from pfnn_core.skeleton import skeleton_dict

    skeleton = json.loads(json.dumps(skeleton_dict(bvh.load(fc.REAL_CLIP))))
    recording = journal.RecordingJournal.start(folder / "seed", skeleton, 1 / 60)
    for k in range(12):
        recording.append(frame(k, len(skeleton["names"])))
    recording.close(keep=True)

    def check(data):
        path = folder / "case.pfnn-journal"
        path.write_bytes(data)
        outcome, value = fc.run_bounded(journal.read_journal, path, journal.JournalError, len(data))
        if outcome == "ok":
            bvh.check_motion(value.motion)
            assert value.motion.num_frames <= 12
            return "loaded"
        return "refused"

    return fc.byte_mutation([recording.path.read_bytes()]), check


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bvh-cases", type=int, default=10_000)
    parser.add_argument("--json-cases", type=int, default=2_000, help="split over scripts, edit lists, labels")
    parser.add_argument("--checkpoint-cases", type=int, default=1_000)
    parser.add_argument("--journal-cases", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    table: list = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="pfnn-fuzz-") as temporary:
        folder = Path(temporary)
        for name, strategy, check, share in bvh_kinds(folder):
            ok &= run_kind(name, strategy, check, max(1, round(share * args.bvh_cases)), args.seed, table)
        for name, strategy, check in json_kinds(folder):
            ok &= run_kind(name, strategy, check, max(1, args.json_cases // 3), args.seed, table)
        strategy, check = checkpoint_kind(folder)
        ok &= run_kind("checkpoints", strategy, check, args.checkpoint_cases, args.seed, table)
        strategy, check = journal_kind(folder)
        ok &= run_kind("recording journals", strategy, check, args.journal_cases, args.seed, table)
    bvh_rows = [row for row in table if row[0].startswith("BVH")]
    print(f"\nBVH: {sum(r[1] for r in bvh_rows)} cases, {sum(r[2] for r in bvh_rows)} loaded, "
          f"{sum(r[3] for r in bvh_rows)} refused with BVHError, {sum(r[4] for r in bvh_rows):.0f} s; all readers: "
          f"{sum(r[1] for r in table)} cases in {sum(r[4] for r in table):.0f} s; "
          + ("every case ended as the readers promise" if ok else "A DEMAND WAS BROKEN (above)"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
