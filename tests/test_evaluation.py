"""pfnn-eval end to end: two subjects, the report, and the evaluation failing bad models."""
import dataclasses
import json

import numpy as np
import pytest
import torch
from conftest import DEFAULT_MODEL

from pfnn_core.evaluation import cli, reference, rollouts, suite
from pfnn_core.evaluation.analysis import Row
from pfnn_core.features.layout import make_layouts
from pfnn_core.features.samples import clip_features
from pfnn_core.models.base import ModelOutput
from pfnn_core.models.checkpoint import save_checkpoint
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.motion import bvh
from pfnn_core.runtime.settings import RuntimeSettings

QUICK_DRIVES = ["idle", "walk_start", "run_walk_stop", "side_steps", "backpedal"]


def random_weights(path, out):
    """The checkpoint at `path` with its network's weights drawn afresh: same layout, normalisation,
    skeleton and metadata, nothing learnt."""
    from pfnn_core.models.pfnn.model import PFNN

    checkpoint = load_checkpoint(path)
    torch.manual_seed(0)
    save_checkpoint(out, PFNN(checkpoint.config), checkpoint.layout, checkpoint.norm, checkpoint.meta)
    return out


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    """pfnn-eval --quick on the shipped model with random weights."""
    folder = tmp_path_factory.mktemp("eval")
    checkpoint = random_weights(DEFAULT_MODEL, folder / "random.safetensors")
    out = folder / "report"
    code = cli.main(["--model", str(checkpoint), "--out", str(out), "--quick"])
    return code, out


def network_targets(results: dict) -> list[dict]:
    return [row for row in results["rows"] if row["subject"] == "network" and row["passed"] is not None]


def _controller(row) -> bool:
    """A controller measure's row: its changes are those each subject's own motion shows."""
    return any(word in row["measure"] for word in ("latency", "determin", "noise", "slip"))


def test_a_random_network_fails_nearly_every_network_target(random_run):
    code, out = random_run
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    targets = network_targets(results)
    failed = [row for row in targets if not row["passed"]]
    assert len(targets) >= 50
    assert results["checked"]["network"] == len(targets)
    # The hover detectors ("both feet up") catch one fault, feet lifted to hide sliding, which a random
    # network's collapsed pose never shows: they are judged on their own (test_evaluation_measures.py).
    # The controller measures (latency, determinism, noise, slip) are judged on models built for them
    # (test_eval_latency.py, test_eval_smoothness.py): a collapsed pose answers at once and alike.
    quality = [row for row in targets if not row["measure"].startswith("both feet up") and not _controller(row)]
    assert sum(not row["passed"] for row in quality) >= 0.9 * len(quality), \
        [row["measure"] for row in quality if row["passed"]]
    assert results["passed"]["network"] == len(targets) - len(failed)
    # the body measures are among the failures, not only the controller's
    failed_measures = {row["measure"] for row in failed}
    assert {"realism: nearest mocap frame, median", "foot skating (walk)", "foot skating (side)"} <= failed_measures


def test_the_runtime_does_not_hide_a_random_network(random_run):
    """Foot locks, IK, settling steps and the command springs reach the controller's own targets whatever
    the network does (stops settle by the runtime's own steps); the body measures must still fail for
    the runtime subject."""
    _, out = random_run
    results = json.loads((out / "results.json").read_text())
    runtime = [row for row in results["rows"] if row["subject"] == "runtime" and row["passed"] is not None]
    failed = {row["measure"] for row in runtime if not row["passed"]}
    assert {"foot skating (walk)", "foot skating (run)", "pose pops per minute"} <= failed
    assert results["passed"]["runtime"] < 0.7 * results["checked"]["runtime"]


def test_results_have_one_row_per_measure_subject_and_drive(random_run):
    _, out = random_run
    results = json.loads((out / "results.json").read_text())
    keys = {"measure", "subject", "drive", "value", "unit", "target", "passed"}
    for row in results["rows"]:
        assert keys <= set(row) and row["subject"] in ("network", "runtime")
        assert isinstance(row["value"], float) or row["value"] in ("inf", "nan"), row
    by_subject = {s: {(r["drive"], r["measure"]) for r in results["rows"] if r["subject"] == s}
                  for s in ("network", "runtime")}
    drive_rows = {key for key in by_subject["runtime"] if key[0] != "held-out clips" and not _controller({"measure": key[1]})}
    assert drive_rows <= by_subject["network"]  # every runtime measure is there for the network too
    assert {"idle", *QUICK_DRIVES} <= {drive for drive, _ in by_subject["network"]}


def test_report_shows_both_subjects_side_by_side_network_first(random_run, capsys):
    _, out = random_run
    report = (out / "report.md").read_text()
    assert "| drive | measure | network | runtime | mocap | target | note |" in report
    assert report.index("- network:") < report.index("- runtime:")
    for name in QUICK_DRIVES:
        for png in (out / "plots" / f"{name}.png", out / "plots" / f"{name}_filmstrip.png"):
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        for subject in ("network", "runtime"):
            assert bvh.load(out / "drives" / name / subject / "motion.bvh").num_frames > 0
            assert (out / "drives" / name / subject / "script.json").is_file()


def test_the_shipped_model_beats_a_barely_trained_one_on_realism_and_skating(tmp_path, walk_motion):
    """A model trained one epoch on four clips against the shipped one, bare network, same drives."""
    from pfnn_core.training.config import TrainConfig
    from pfnn_core.training.loop import train

    folder = DEFAULT_MODEL.parents[1] / "bvh" / "bandai-namco-ds2"
    clips = [str(folder / f"dataset-2_{name}_normal_001.bvh.gz") for name in ("walk", "run", "walk-turn-left")]
    clips.append(str(folder / "dataset-2_raise-up-both-hands_normal_001.bvh.gz"))
    tiny = train(TrainConfig(data=clips, out=str(tmp_path / "tiny.safetensors"), hidden_size=32, epochs=1,
                             batch_size=64, seed=0))
    drives = ["walk_start", "run"]

    def scores(model):
        result = cli.evaluate(model, tmp_path / model.stem, quick=True, drives=drives,
                              bvh_dir=DEFAULT_MODEL.parents[1] / "bvh" / "bandai-namco-ds2")
        rows = [r for r in result["rows"] if r.subject == "network"]
        realism = np.mean([r.value for r in rows if r.measure == "realism: nearest mocap frame, median"])
        skating = np.mean([r.value for r in rows if r.measure.startswith("foot skating")])
        return realism, skating

    tiny_realism, tiny_skating = scores(tiny.out_path)
    shipped_realism, shipped_skating = scores(DEFAULT_MODEL)
    assert tiny_realism > shipped_realism and tiny_skating > shipped_skating


def test_feet_held_above_the_capture_floor_are_a_failure(tmp_path):
    """A checkpoint whose poses sit 20 cm above the capture's floor (as a model of another rig whose
    floor came from its own standing pose): its feet float, and the evaluation says so."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    norm = {name: value.clone() for name, value in checkpoint.norm.items()}
    # every pose 20 cm higher, in and out, so the network itself runs exactly as before
    for name, layout in (("x_mean", checkpoint.layout.x), ("y_mean", checkpoint.layout.y)):
        part = layout.slice("joint_pos")
        norm[name][part] += torch.tensor([0.0, 0.2, 0.0]).repeat((part.stop - part.start) // 3)
    lifted = tmp_path / "lifted.safetensors"
    save_checkpoint(lifted, checkpoint.model, checkpoint.layout, norm, checkpoint.meta)
    result = cli.evaluate(lifted, tmp_path / "out", quick=True, drives=["idle", "walk_start"],
                          bvh_dir=DEFAULT_MODEL.parents[1] / "bvh" / "bandai-namco-ds2")
    floating = [r for r in result["rows"] if r.measure.startswith("floating feet")]
    assert {r.subject for r in floating} == {"network", "runtime"}
    highest = [float(r.note.split("highest ")[1].split(" cm")[0]) for r in floating]
    assert all(r.passed is False and r.value > 0.5 for r in floating) and min(highest) > 15.0, floating


class TeacherNetwork:
    """Predicts the clip's own outputs in order: a perfect network for the rollout wiring."""

    def __init__(self, clip, layouts):
        self.x_layout, self.y_layout = layouts
        self.outputs, self.calls = clip.y, 0

    def initial_model_state(self, batch):
        return {}

    def step(self, inputs):
        y = self.outputs[self.calls:self.calls + 1].astype(np.float64)
        self.calls += 1
        return ModelOutput(y, inputs.state)


def test_a_perfect_network_rolls_out_with_the_labels(bvh_dir):
    motion = bvh.load(bvh_dir / "dataset-2_walk-turn-left_normal_001.bvh.gz")
    layouts = make_layouts(motion.num_joints)
    clip = clip_features(motion, layouts, runs=False)
    rollout = rollouts.rollout_on_clip(TeacherNetwork(clip, layouts), clip, "turn", settings=RuntimeSettings())
    assert rollout.contact_f1 == 1.0
    assert rollout.phase_drift_at(4.0) < 0.02  # the labelled dphase integrated: the labels to rounding
    assert rollout.correlation == pytest.approx(1.0)
    assert abs(rollout.mocap_path[-1, 0]) > 0.5  # the clip's own path (turning left), not a straight line


def test_held_out_clips_are_found_whatever_their_compression(bvh_dir, tmp_path):
    names = [p.name for p in bvh.find_files(bvh_dir)][:3]
    card = load_checkpoint(DEFAULT_MODEL).card
    stored = dataclasses.replace(card, val_files=tuple(bvh.clip_name(n) + ".bvh" for n in names))  # trained before .gz
    paths, note = reference.held_out_clips(stored, bvh_dir)
    assert [p.name for p in paths] == names and "stored" in note
    everything, note = reference.held_out_clips(dataclasses.replace(card, val_files=(), data_files=()), bvh_dir)
    assert len(everything) == len(bvh.find_files(bvh_dir)) and "may have been trained on" in note


def test_segment_kinds_and_stops():
    drive = suite.ScriptedDrive("d", (suite._segment(1, (0, 0)), suite._segment(1, (1, 0), face=(0, 1)),
                                      suite._segment(1, (0, -1), face=(0, 1)), suite._segment(1, (0, 1), run=True),
                                      suite._segment(1, (0, 0))), "")
    assert [suite.segment_kind(s) for s in drive.segments] == ["stand", "side", "back", "run", "stand"]
    assert drive.stops() == [4]
    assert all(suite.segment_kind(s) != "stand" or d.stops() is not None
               for d in suite.drive_suite(True) for s in d.segments)


def test_bad_model_path_or_drive_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["--model", str(tmp_path / "missing.safetensors"), "--out", str(tmp_path / "o")]) == 2
    assert "missing.safetensors" in capsys.readouterr().err
    assert cli.main(["--model", str(DEFAULT_MODEL), "--out", str(tmp_path / "o"), "--drives", "moonwalk"]) == 2
    assert "unknown drive 'moonwalk'" in capsys.readouterr().err


def test_threads_limit_numpys_blas_pools_as_well_as_torchs(tmp_path, capsys):
    """`--threads 1` must hold every pool to one thread: with torch's alone, numpy's BLAS kept its
    pool of all cores and an evaluation beside a training took both."""
    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(limits=2)
    torch.set_num_threads(2)
    assert cli.main(["--model", str(tmp_path / "missing.safetensors"), "--out", str(tmp_path / "o"),
                     "--threads", "1"]) == 2  # the limits are set before the model is read
    pools = threadpool_info()
    assert pools and all(pool["num_threads"] == 1 for pool in pools)
    assert torch.get_num_threads() == 1
    threadpool_limits(limits=2)
    assert cli.main(["--model", str(tmp_path / "missing.safetensors"), "--out", str(tmp_path / "o")]) == 2
    assert all(pool["num_threads"] == 1 for pool in threadpool_info())  # one thread by default, as pfnn-drive
    assert cli.main(["--model", str(tmp_path / "missing.safetensors"), "--out", str(tmp_path / "o"),
                     "--threads", "0"]) == 2  # refused with a message, not a crash
    assert "--threads must be at least 1" in capsys.readouterr().err


def test_row_json_keeps_infinities_readable():
    row = Row("m", "network", "d", float("inf"), "s", "<= 1 s", False)
    assert row.as_dict()["value"] == "inf" and row.as_dict()["passed"] is False


def test_a_users_script_has_every_start_from_standing_measured(tmp_path):
    """`pfnn-eval --scripts`: each start from standing in the script gets its own response row, named
    by its time; forward walks are held to the 0.6 s target, runs and strafes are reported without one.
    The shipped runtime leans on the command at a start; the bare network takes about a second."""
    script = tmp_path / "starts.json"
    script.write_text(json.dumps({"name": "starts", "segments": [
        {"duration": 1.0, "move": [0, 0]}, {"duration": 2.0, "move": [0, 1]},
        {"duration": 1.5, "move": [0, 0]}, {"duration": 2.0, "move": [1, 0], "run": True},
        {"duration": 1.5, "move": [0, 0]}, {"duration": 1.0, "move": [0.5, 0.5]}]}))
    result = cli.evaluate(DEFAULT_MODEL, tmp_path / "out", quick=True, scripts=[script],
                          bvh_dir=DEFAULT_MODEL.parents[1] / "bvh" / "bandai-namco-ds2")
    starts = {(r.measure, r.subject): r for r in result["rows"] if "from standing at" in r.measure}
    labels = {"walk from standing at 1.0 s", "run from standing at 4.5 s", "walk from standing at 8.0 s"}
    assert {measure.split(":")[0] for measure, _ in starts} == labels
    for (measure, subject), row in starts.items():
        assert row.passed is None if measure.startswith("run") else row.passed == (row.value <= 0.6)
    walk = "walk from standing at 1.0 s: time to 90% of the speed change"
    assert starts[walk, "runtime"].value < 0.6 < starts[walk, "network"].value
