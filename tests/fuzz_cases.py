"""What the reader fuzz tests feed and what they demand, shared by tests/test_fuzz_*.py (bounded, a
fixed seed) and scripts/fuzz_readers.py (the long run).

Inputs (those of JSON documents and checkpoints are in `fuzz_documents`): byte-level mutations
(flips, interesting bytes, insertions, deletions, duplicated spans, truncation) and token-level
mutations (words replaced by keywords, braces, extreme numbers; words and lines deleted, duplicated,
swapped) of real files, and generated BVH hierarchies (depth, breadth, names, channel lists, frame
counts, numbers) written from values the test knows, valid or with one defect.

Demands (`run_bounded`): the reader returns or raises its own error class; the message names the
file (and a line inside it, when it names one); the call ends within `TIME_BOUND_S` and its traced
memory peak stays within `memory_bound(size)`. A BVH that loads must pass independent invariants and
survive a save/load round trip; a generated valid one must load into exactly the values it was
written from.
"""
from __future__ import annotations

import gzip
import math
import re
import signal
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from pfnn_core.motion import bvh

ROOT = Path(__file__).resolve().parents[1]
TINY = Path(__file__).parent / "data" / "tiny.bvh"
REAL_CLIP = ROOT / "assets" / "bvh" / "bandai-namco-ds2" / "dataset-2_walk_normal_001.bvh.gz"
TIME_BOUND_S = 2.0  # per case, on a shared 2-core machine; a case takes milliseconds
HANG_GUARD_S = 20.0  # a Python-level loop that runs this long is interrupted and reported as a hang
CHANNELS = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")

INTERESTING_WORDS = [
    "{", "}", "{}", "ROOT", "JOINT", "End", "Site", "OFFSET", "CHANNELS", "MOTION", "HIERARCHY", "Frames:",
    "Frame", "Time:", "0", "-0", "1", "-1", "2", "3", "6", "7", "nan", "NaN", "inf", "-inf", "1e308", "-1e308",
    "1e-320", "1e999", "0x10", "1_000", "+5", "1e", ".", "-", "9" * 30, "9" * 5000, "Xposition", "xROTATION",
    "Wrotation", "Zrotation", "\u00e9", "\u2028", "\ufeff", "\u00ff", "\t", "\r\n", "#", "\\", '"', "\x0b",
]
INTERESTING_BYTES = [0x00, 0x0A, 0x0D, 0x09, 0x20, 0x7B, 0x7D, 0x2D, 0x2E, 0x65, 0x39, 0x30, 0x80, 0xC3, 0xFF, 0x1F, 0x8B]


class Hang(Exception):
    """A reader ran past HANG_GUARD_S."""


def bvh_seeds() -> list[bytes]:
    """The bundled tiny file and a real clip cut to three frames (22 joints, 6 channels each)."""
    text = gzip.decompress(REAL_CLIP.read_bytes()).decode()
    head, frames = text.split("Frame Time:", 1)
    time_line, numbers = frames.split("\n", 1)
    rows = [line for line in numbers.splitlines() if line.strip()][:3]
    head = re.sub(r"Frames:\s*\d+", "Frames: 3", head)
    clip = head + "Frame Time:" + time_line + "\n" + "\n".join(rows) + "\n"
    return [TINY.read_bytes(), clip.encode()]


# ---- mutations ---------------------------------------------------------------------------------

@st.composite
def byte_mutation(draw, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "byte", "insert", "delete", "duplicate", "truncate"]))
        if kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "byte":
            data[at] = draw(st.sampled_from(INTERESTING_BYTES))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 64))]
        elif kind == "duplicate":
            span = bytes(data[at:at + draw(st.integers(1, 256))])
            where = draw(st.integers(0, len(data)))
            data[where:where] = span * draw(st.integers(1, 3))
        else:
            del data[at:]
    return bytes(data)


@st.composite
def token_mutation(draw, seeds: list[bytes]) -> bytes:
    text = draw(st.sampled_from(seeds)).decode("utf-8")
    pieces = re.split(r"(\s+)", text)  # words at even indices, the whitespace between at odd ones
    for _ in range(draw(st.integers(1, 4))):
        words = list(range(0, len(pieces), 2))
        kind = draw(st.sampled_from(["replace", "replace", "number", "delete", "duplicate", "swap", "lines"]))
        at = draw(st.sampled_from(words))
        if kind == "replace":
            pieces[at] = draw(st.sampled_from(INTERESTING_WORDS))
        elif kind == "number":
            pieces[at] = repr(draw(st.floats(allow_nan=True, allow_infinity=True, width=64)))
        elif kind == "delete":
            pieces[at] = ""
        elif kind == "duplicate":
            pieces[at] = " ".join([pieces[at]] * draw(st.integers(2, 4)))
        elif kind == "swap":
            other = draw(st.sampled_from(words))
            pieces[at], pieces[other] = pieces[other], pieces[at]
        else:
            lines = "".join(pieces).split("\n")
            start = draw(st.integers(0, len(lines) - 1))
            span = lines[start:start + draw(st.integers(1, 12))]
            where = draw(st.integers(0, len(lines)))
            if draw(st.booleans()):
                lines[where:where] = span
            else:
                del lines[start:start + len(span)]
            pieces = re.split(r"(\s+)", "\n".join(lines))
    return "".join(pieces).encode("utf-8", errors="surrogatepass")


# ---- generated hierarchies ----------------------------------------------------------------------

@dataclass
class GeneratedBVH:
    text: str
    valid: bool                 # written without a defect: it must load into exactly these values
    names: list
    parents: list
    offsets: np.ndarray         # [J, 3]
    channels: list              # canonical names per joint
    values: np.ndarray          # [F, C]
    frame_time: float
    end_sites: dict


_NAME_CHARS = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:|\u00e9\u00df\u4e2d")
_SPECIAL_NUMBERS = np.array([0.0, -0.0, 1e-300, 5e-324, 1e8, -1e8, 123456789.0, 90.0, -90.0, 180.0, 1e-7, 0.5])


def _numbers_from(rng: np.random.Generator, shape) -> np.ndarray:
    """Numbers of every kind a file holds: small integers, wide decimals, exact right angles, extremes."""
    kinds = rng.integers(0, 4, size=shape)
    return np.select([kinds == 0, kinds == 1, kinds == 2],
                     [rng.integers(-100, 101, size=shape).astype(float), rng.uniform(-1e4, 1e4, size=shape),
                      rng.choice(_SPECIAL_NUMBERS, size=shape)], rng.normal(0.0, 30.0, size=shape))


def _tree(shape: str, count: int, rng: np.random.Generator) -> list[int]:
    """Parents of a joint tree: a deep chain, a wide star, or random, numbered as a BVH file lists them."""
    if shape == "chain":
        return [-1] + list(range(count - 1))
    if shape == "star":
        return [-1] + [0] * (count - 1)
    return _preorder([-1] + [int(rng.integers(0, j)) for j in range(1, count)])


def _preorder(parents: list[int]) -> list[int]:
    """The same tree numbered in the order a BVH file lists its joints (depth first, children in order)."""
    children = {j: [c for c in range(len(parents)) if parents[c] == j] for j in range(len(parents))}
    order, stack = [], [0]
    while stack:
        joint = stack.pop()
        order.append(joint)
        stack.extend(reversed(children[joint]))
    number = {old: new for new, old in enumerate(order)}
    return [-1] + [number[parents[old]] for old in order[1:]]


@st.composite
def generated_bvh(draw) -> GeneratedBVH:
    """Hypothesis draws the structure (shape, joint and frame counts, frame time, layout, the defect);
    a numpy generator seeded by it fills in names, channel lists and numbers, so a case of hundreds of
    joints costs milliseconds to make."""
    shape = draw(st.sampled_from(["chain", "star", "random", "random"]))
    size = draw(st.sampled_from(["small"] * 6 + ["large"] * 3 + ["deep"]))
    count = draw(st.integers(*{"small": (1, 24), "large": (25, 300 if shape != "random" else 80),
                               "deep": (1000, 1500)}[size]))
    shape = "chain" if size == "deep" else shape  # deeper than Python's recursion limit
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parents = _tree(shape, count, rng)
    names = []
    for j in range(count):
        name = " ".join("".join(rng.choice(_NAME_CHARS, size=rng.integers(1, 9))) for _ in range(rng.integers(1, 3)))
        names.append(name + (f"_{j}" if name in names else ""))
    channels = [[str(c) for c in rng.permutation(CHANNELS)[:rng.integers(0, 7)]] for _ in range(count)]
    if not any(channels):
        channels[0] = ["Zrotation"]  # frames of no numbers at all are blank lines, which BVH skips
    leaves = [j for j in range(count) if j not in set(parents)]
    end_sites = {j: _numbers_from(rng, 3) for j in leaves if rng.random() < 0.5}
    frames = draw(st.integers(1, 12))
    values = _numbers_from(rng, (frames, sum(len(c) for c in channels)))
    frame_time = draw(st.sampled_from([1 / 30, 1 / 60, 1 / 120, 0.5, 1e-3, 2.0]))
    case = GeneratedBVH("", True, names, parents, _numbers_from(rng, (count, 3)), channels, values, frame_time,
                        end_sites)
    case.text = write_generated(case, draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans()))
    defect = draw(st.sampled_from([None] * 6 + list(DEFECTS)))
    if defect is not None:
        case.text, case.valid = DEFECTS[defect](case.text, draw), False
    return case


def write_generated(case: GeneratedBVH, newline: str, lower_case: bool) -> str:
    """The case as BVH text, written here (not by `bvh.save`), keywords in any case."""
    def keyword(word):
        return word.lower() if lower_case else word

    children = {j: [] for j in range(-1, len(case.names))}
    for j, p in enumerate(case.parents):
        children[p].append(j)
    lines = [keyword("HIERARCHY")]
    stack = [(0, False)]
    while stack:
        j, closing = stack.pop()
        if closing:
            if j in case.end_sites:
                lines += [keyword("End Site"), "{", f"{keyword('OFFSET')} {_numbers(case.end_sites[j])}", "}"]
            lines.append("}")
            continue
        lines += [f"{keyword('ROOT' if j == 0 else 'JOINT')} {case.names[j]}", "{",
                  f"{keyword('OFFSET')} {_numbers(case.offsets[j])}"]
        if case.channels[j]:
            lines.append(f"{keyword('CHANNELS')} {len(case.channels[j])} {' '.join(case.channels[j])}")
        stack.append((j, True))
        stack.extend((c, False) for c in reversed(children[j]))
    lines += [keyword("MOTION"), f"{keyword('Frames')}: {len(case.values)}", f"{keyword('Frame Time')}: {case.frame_time!r}"]
    lines += [_numbers(row) for row in case.values]
    return newline.join(lines) + newline


def _numbers(values) -> str:
    return " ".join(repr(float(v)) for v in values)


def _second_line_with(word):
    def defect(text, draw):
        lines = text.split("\n")
        found = [i for i, line in enumerate(lines) if word in line]
        if not found:
            return text + "}"
        i = draw(st.sampled_from(found))
        lines.insert(i, lines[i])
        return "\n".join(lines)
    return defect


def _rename_second_joint(text, draw):
    root = re.search(r"(?im)^root (.*?)\r?$", text)
    return re.sub(r"(?im)^(joint) .*?(\r?)$", lambda m: f"{m[1]} {root[1]}{m[2]}", text, 1) if root else text


DEFECTS = {
    "missing_brace": lambda text, draw: text.replace("}", "", 1),
    "extra_brace": lambda text, draw: text.replace("{", "{ {", 1),
    "repeated_joint_line": _second_line_with("JOINT"),
    "second_root": lambda text, draw: text.replace("MOTION", "ROOT extra\n{\nOFFSET 0 0 0\n}\nMOTION")
    .replace("motion", "ROOT extra\n{\nOFFSET 0 0 0\n}\nmotion"),
    "more_frames_declared": lambda text, draw: re.sub(r"(?i)(frames:) (\d+)", lambda m: f"{m[1]} {int(m[2]) + 1}", text),
    "nan_value": lambda text, draw: text.rstrip() + " nan\n",
    "channel_count": lambda text, draw: re.sub(r"(?i)(channels) (\d)", lambda m: f"{m[1]} {int(m[2]) + 1}", text, 1),
    "no_offset": lambda text, draw: re.sub(r"(?im)^offset .*$", "", text, 1),
    "duplicate_name": _rename_second_joint,
    "huge_channel_count": lambda text, draw: re.sub(r"(?i)(channels) (\d)", lambda m: f"{m[1]} {'9' * 5000}", text, 1),
    "brace_in_name": lambda text, draw: re.sub(r"(?im)^(joint|root) (\S)", lambda m: f"{m[1]} {m[2]}}}", text, 1),
    "tiny_frame_time": lambda text, draw: re.sub(r"(?i)(frame time): \S+", lambda m: f"{m[1]}: 1e-320", text),
    "huge_offset": lambda text, draw: re.sub(r"(?im)^(offset) .*?(\r?)$", lambda m: f"{m[1]} 1e308 1e308 1e308{m[2]}",
                                             text),
}


# ---- demands -----------------------------------------------------------------------------------

def memory_bound(size: int) -> int:
    """Traced bytes a reader may peak at for an input of `size` bytes: a floor for the fixed costs and
    the arrays of a small take, and a fixed multiple of the input (never a power of it)."""
    return 160 * 2**20 + 256 * size


def run_bounded(read, path: Path, error_class, size: int, time_bound_s: float = TIME_BOUND_S):
    """`read(path)` under the time and memory bounds: ('ok', value) or ('refused', error); an
    AssertionError for any other exception, a message that does not name the file, a hang or too much
    memory."""
    def on_alarm(signum, frame):
        raise Hang(f"{path}: the reader ran past {HANG_GUARD_S} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_GUARD_S)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        outcome = ("ok", read(path))
    except error_class as error:
        outcome = ("refused", error)
    except Hang as hang:
        raise AssertionError(str(hang)) from None
    except Exception as error:  # what the fuzzer is here to find
        raise AssertionError(f"{type(error).__name__} instead of {error_class.__name__}: {error}") from error
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert elapsed < time_bound_s, f"{path}: the reader took {elapsed:.2f} s (bound {time_bound_s} s)"
    assert peak < memory_bound(size), f"{path}: the reader peaked at {peak / 2**20:.0f} MiB for {size} bytes"
    if outcome[0] == "refused":
        message = str(outcome[1])
        assert str(path) in message, f"the message does not name the file: {message}"
    return outcome


def assert_line_in_file(message: str, data: bytes) -> None:
    """A 'line N' in a message points inside the file (or just past its end)."""
    lines = data.count(b"\n") + data.count(b"\r") * (b"\n" not in data) + 1
    for number in re.findall(r"\bline (\d+)", message):
        assert 1 <= int(number) <= lines + 1, f"line {number} of a file of {lines} lines: {message}"


def assert_sound_motion(motion) -> None:
    """Invariants written here, independently of `bvh.check_motion`."""
    count = len(motion.names)
    parents = np.asarray(motion.parents)
    assert count >= 1 and parents.shape == (count,) and parents[0] == -1
    assert all(0 <= parents[j] < j for j in range(1, count)), "every parent comes before its child"
    assert len(set(motion.names)) == count, "joint names are unique"
    assert all(name and name == name.strip() and "{" not in name and "}" not in name for name in motion.names)
    assert motion.rotations.shape == (motion.num_frames, count, 4) and motion.num_frames >= 1
    assert motion.positions.shape == (motion.num_frames, count, 3) and motion.offsets.shape == (count, 3)
    for chans in motion.channels:
        assert len(set(chans)) == len(chans) and set(chans) <= set(CHANNELS)
    for values in (motion.offsets, motion.rotations, motion.positions):
        assert np.isfinite(values).all()
    np.testing.assert_allclose(np.linalg.norm(motion.rotations, axis=-1), 1.0, atol=1e-9)
    assert math.isfinite(motion.frame_time) and motion.frame_time > 0 and math.isfinite(motion.fps)
    assert math.isfinite(motion.scale) and motion.scale > 0
    assert np.isfinite(motion.global_positions()).all()


def assert_round_trip(bvh, path: Path, folder: Path) -> None:
    """A file that loads saves and loads back to the same skeleton and frames (file units)."""
    original = bvh.load(path, scale=1.0)
    copy = folder / "round_trip.bvh"
    bvh.save(original, copy)
    again = bvh.load(copy, scale=1.0)
    assert again.names == original.names and again.channels == original.channels
    np.testing.assert_array_equal(again.parents, original.parents)
    scale = 1.0 + np.abs(original.positions).max() + np.abs(original.offsets).max()
    np.testing.assert_allclose(again.offsets, original.offsets, atol=1e-6 * scale, rtol=0)
    np.testing.assert_allclose(again.positions, original.positions, atol=1e-6 * scale, rtol=0)
    dots = np.abs(np.sum(again.rotations * original.rotations, axis=-1))
    angle = np.degrees(2 * np.arccos(np.clip(dots, -1, 1)))
    assert angle.max() < 1e-3, f"rotations moved by {angle.max():.2g} degrees in a round trip"


def assert_generated_values(motion, case: GeneratedBVH) -> None:
    """A generated valid file loads into the values it was written from (scale 1)."""
    assert motion.names == case.names
    assert motion.parents.tolist() == case.parents
    assert motion.channels == case.channels
    np.testing.assert_array_equal(motion.offsets, case.offsets)
    assert sorted(motion.end_sites) == sorted(case.end_sites)
    for j, site in case.end_sites.items():
        np.testing.assert_array_equal(motion.end_sites[j], site)
    assert motion.frame_time == case.frame_time and motion.num_frames == len(case.values)
    column = 0
    for j, chans in enumerate(case.channels):
        rotation_axes, rotation_columns = "", []
        expected_position = np.repeat(case.offsets[j][None], len(case.values), axis=0)
        for name in chans:
            if name.endswith("position"):
                expected_position[:, "XYZ".index(name[0])] = case.values[:, column]
            else:
                rotation_axes += name[0]
                rotation_columns.append(column)
            column += 1
        np.testing.assert_array_equal(motion.positions[:, j], expected_position)
        expected = np.tile(np.eye(3), (len(case.values), 1, 1))
        if rotation_axes:
            expected = Rotation.from_euler(rotation_axes, case.values[:, rotation_columns], degrees=True).as_matrix()
        w, x, y, z = np.moveaxis(motion.rotations[:, j], -1, 0)
        actual = Rotation.from_quat(np.stack([x, y, z, w], axis=-1)).as_matrix()
        np.testing.assert_allclose(actual, expected, atol=1e-9)


def check_bvh(data: bytes, folder: Path, case: GeneratedBVH | None = None, name: str = "case.bvh") -> str:
    """Every demand on one BVH input: 'loaded' or 'refused', else an AssertionError saying what broke."""
    path = folder / name
    path.write_bytes(data)
    outcome, value = run_bounded(bvh.load, path, bvh.BVHError, len(data))
    if outcome == "refused":
        assert_line_in_file(str(value), data)
        assert case is None or not case.valid, f"a valid generated file was refused: {value}"
        return "refused"
    assert_sound_motion(value)
    assert_round_trip(bvh, path, folder)
    if case is not None and case.valid:
        assert_generated_values(bvh.load(path, scale=1.0), case)
    return "loaded"
