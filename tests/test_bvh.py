"""BVH load/save: round trips on the bundled data, a hand-checked tiny file, odd-but-valid variants that
must load exactly like their clean originals, and malformed files that must raise BVHError naming the file."""
import gzip
import re
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.math.quat import quat_from_euler
from pfnn_core.motion import bvh, bvh_parse

TINY = Path(__file__).parent / "data" / "tiny.bvh"


def assert_same_motion(a: bvh.Motion, b: bvh.Motion, atol=0.0):
    assert a.names == b.names and a.channels == b.channels
    np.testing.assert_array_equal(a.parents, b.parents)
    np.testing.assert_allclose(a.offsets, b.offsets, atol=atol, rtol=0)
    np.testing.assert_allclose(a.positions, b.positions, atol=atol, rtol=0)
    np.testing.assert_allclose(a.rotations, b.rotations, atol=atol, rtol=0)
    assert a.frame_time == b.frame_time and a.scale == b.scale
    assert sorted(a.end_sites) == sorted(b.end_sites)
    for j in a.end_sites:
        np.testing.assert_allclose(a.end_sites[j], b.end_sites[j], atol=atol, rtol=0)


def test_tiny_file_values():
    m = bvh.load(TINY, scale=1.0)
    assert m.names == ["Hips", "Spine", "Head", "Leg_L"]
    assert m.parents.tolist() == [-1, 0, 1, 0]
    assert m.channels[0] == ["Xposition", "Yposition", "Zposition", "Zrotation", "Xrotation", "Yrotation"]
    assert m.channels[2] == ["Xrotation", "Yrotation", "Zrotation"]
    assert (m.num_frames, m.num_joints, m.frame_time, m.fps, m.duration) == (3, 4, 0.5, 2.0, 1.0)
    np.testing.assert_allclose(m.offsets, [[0, 0, 0], [0, 10, 0], [0, 20, 0], [10, 0, 0]])
    np.testing.assert_allclose(m.end_sites[2], [0, 5, 0])
    np.testing.assert_allclose(m.end_sites[3], [0, -90, 0])
    # Position channels replace the root's offset; other joints keep their offsets as translations.
    np.testing.assert_allclose(m.positions[:, 0], [[1, 2, 3], [1, 2, 3], [4, 2, 3]])
    np.testing.assert_allclose(m.positions[:, 1], [[0, 10, 0]] * 3)
    np.testing.assert_allclose(m.rotations[1, 0], [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-12)
    np.testing.assert_allclose(m.rotations[1, 2], [np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0], atol=1e-12)
    assert m.joint_index("Head") == 2
    with pytest.raises(KeyError):
        m.joint_index("Tail")


def test_scale_detection_and_override(tmp_path):
    cm = bvh.load(TINY)
    assert cm.scale == 0.01
    np.testing.assert_allclose(cm.positions, bvh.load(TINY, scale=1.0).positions * 0.01)
    assert bvh.load(TINY, scale=2.0).scale == 2.0
    metres = cm.copy()
    metres.scale = 1.0  # write the metre values as they are: a file in metres
    bvh.save(metres, tmp_path / "metres.bvh")
    again = bvh.load(tmp_path / "metres.bvh")
    assert again.scale == 1.0
    np.testing.assert_allclose(again.positions, cm.positions, atol=1e-6)


def test_bundled_data_detected_in_centimetres(bundled_bvh_files):
    m = bvh.load(bundled_bvh_files[0])
    assert m.scale == 0.01 and m.num_joints == 22 and m.frame_time == pytest.approx(1 / 30, rel=1e-5)
    hips = m.global_positions()[:, m.joint_index("Hips")]
    assert 0.7 < hips[:, 1].mean() < 1.2  # hips about a metre above the floor


def test_round_trip_every_bundled_file(bundled_bvh_files, tmp_path):
    assert len(bundled_bvh_files) > 100
    for path in bundled_bvh_files:
        original = bvh.load(path, scale=1.0)
        bvh.save(original, tmp_path / "copy.bvh")
        again = bvh.load(tmp_path / "copy.bvh", scale=1.0)
        assert again.names == original.names and again.channels == original.channels
        np.testing.assert_allclose(again.offsets, original.offsets, atol=1e-4, rtol=0)
        np.testing.assert_allclose(again.positions, original.positions, atol=1e-4, rtol=0)
        dots = np.abs(np.sum(again.rotations * original.rotations, axis=-1))
        # 1e-4 degrees of rotation is a quaternion dot product within ~1e-12 of one.
        assert np.all(np.degrees(2 * np.arccos(np.clip(dots, -1, 1))) < 1e-4), path.name


def test_round_trip_keeps_scale_units_and_end_sites(tmp_path):
    m = bvh.load(TINY)
    bvh.save(m, tmp_path / "t.bvh")
    text = (tmp_path / "t.bvh").read_text()
    assert "OFFSET 10.000000 0.000000 0.000000" in text  # file units (cm), not metres
    assert_same_motion(bvh.load(tmp_path / "t.bvh"), m, atol=1e-9)


def test_partial_rotation_channels(tmp_path):
    text = TINY.read_text().replace("CHANNELS 3 Xrotation Yrotation Zrotation", "CHANNELS 1 Yrotation")
    lines = text.splitlines()
    start = lines.index("Frame Time: 0.5") + 1
    for i in range(start, len(lines)):
        values = lines[i].split()
        lines[i] = " ".join(values[:9] + ["25"] + values[12:])
    (tmp_path / "y.bvh").write_text("\n".join(lines) + "\n")
    m = bvh.load(tmp_path / "y.bvh", scale=1.0)
    np.testing.assert_allclose(m.rotations[:, 2], quat_from_euler(np.radians([[25.0, 0, 0]] * 3), "YXZ"), atol=1e-12)
    bvh.save(m, tmp_path / "y2.bvh")
    assert_same_motion(bvh.load(tmp_path / "y2.bvh", scale=1.0), m, atol=1e-6)


# ---- odd but valid: must load exactly like the clean original -------------------------------------

def _sci_motion(text):
    head, body = text.split("Frame Time:", 1)
    time_line, numbers = body.split("\n", 1)
    rows = ["  ".join(f"{float(x):.17e}" for x in line.split()) for line in numbers.splitlines() if line.strip()]
    return head + "Frame Time:" + time_line + "\n" + "\n".join(rows) + "\n"


VARIANTS = {
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "spaces_for_tabs": lambda t: t.replace("\t", "    "),
    "tabs_everywhere": lambda t: re.sub(r"(?<=\S) (?=\S)", "\t", t),
    "blank_lines": lambda t: t.replace("\n", "\n\n"),
    "extra_whitespace": lambda t: "\n" + "\n".join("  " + line + " \t " for line in t.splitlines()) + "\n\n",
    "scientific_numbers": _sci_motion,
    "lowercase_keywords": lambda t: re.sub(r"HIERARCHY|ROOT|JOINT|OFFSET|CHANNELS|End Site|MOTION|Frames|Frame Time",
                                           lambda m: m.group().lower(), t),
    "lowercase_channels": lambda t: re.sub(r"[XYZ](position|rotation)", lambda m: m.group().lower(), t),
    "braces_on_joint_lines": lambda t: re.sub(r"\n\s*\{", " {", t),
    "no_final_newline": lambda t: t.rstrip("\n"),
    "frame_time_no_space": lambda t: t.replace("Frame Time: ", "Frame Time:"),
    "utf8_bom": lambda t: "\ufeff" + t,
    "classic_mac_line_endings": lambda t: t.replace("\n", "\r"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_odd_but_valid_variants_load_like_the_clean_file(variant, tmp_path, bundled_bvh_files):
    for clean_path in (TINY, bundled_bvh_files[0]):
        text = bvh.read_bytes(clean_path).decode()
        odd = tmp_path / f"{variant}.bvh"
        odd.write_bytes(VARIANTS[variant](text).encode("utf-8"))
        clean, loaded = bvh.load(clean_path), bvh.load(odd)
        loaded.source = clean.source
        assert_same_motion(loaded, clean)


# ---- malformed: every case raises BVHError naming the file ---------------------------------------

def _motion_line(text, index):
    lines = text.split("\n")
    return lines, lines.index("Frame Time: 0.5") + 1 + index


def _replace_frame(text, index, new_line):
    lines, i = _motion_line(text, index)
    lines[i] = new_line
    return "\n".join(lines)


BROKEN = {
    "too_few_values": (lambda t: _replace_frame(t, 1, "1 2 3 90 0 0 0 0 0 90 0 0 0 0"), r"line 34.*expected 15 values.*found 14"),
    "too_many_values": (lambda t: _replace_frame(t, 0, "1 2 3 0 0 0 0 0 0 0 0 0 0 0 0 7"), r"line 33.*expected 15.*found 16"),
    "uneven_lines_same_total": (lambda t: _replace_frame(_replace_frame(t, 0, "1 2 3 0 0 0 0 0 0 0 0 0 0 0 0 0"), 1,
                                                         "1 2 3 90 0 0 0 0 0 90 0 0 0 0"), r"line 33.*expected 15.*found 16"),
    "fewer_frames": (lambda t: t.replace("Frames: 3", "Frames: 5"), r"expected 5 frames.*found 3"),
    "more_frames": (lambda t: t.replace("Frames: 3", "Frames: 2"), r"line 35.*expected 2 frames"),
    "non_number": (lambda t: _replace_frame(t, 2, "4 2 3 0 0 0 0 zero 0 0 0 0 30 0 0"), r"line 35.*expected a number.*'zero'"),
    "comma_decimal": (lambda t: _replace_frame(t, 2, "4 2 3 0 0 0 0 0,5 0 0 0 0 30 0 0"), r"line 35.*'0,5'"),
    "glued_numbers": (lambda t: _replace_frame(t, 2, "4 2 3 0 0 0 0 0 0 0 0 0 30-1 0"), r"line 35.*'30-1'"),
    "nan": (lambda t: _replace_frame(t, 0, "1 2 3 0 nan 0 0 0 0 0 0 0 0 0 0"), r"line 33.*finite.*'nan'"),
    "inf": (lambda t: _replace_frame(t, 0, "1 2 3 0 0 0 0 0 0 0 0 0 0 0 -inf"), r"line 33.*finite.*'-inf'"),
    "nan_offset": (lambda t: t.replace("OFFSET 0 10 0", "OFFSET 0 nan 0"), r"line 8.*finite"),
    "bad_offset": (lambda t: t.replace("OFFSET 0 10 0", "OFFSET 0 ten 0"), r"line 8.*expected a number.*'ten'"),
    "unknown_channel": (lambda t: t.replace("CHANNELS 3 Zrotation Xrotation Yrotation",
                                            "CHANNELS 3 Zrotation Xrotation Wrotation", 1),
                        r"line 9.*unknown channel name 'Wrotation'"),
    "channel_count_mismatch": (lambda t: t.replace("CHANNELS 3 Zrotation Xrotation Yrotation",
                                                   "CHANNELS 4 Zrotation Xrotation Yrotation", 1),
                               r"line 9.*declares 4 channels, found 3"),
    "duplicate_channel": (lambda t: t.replace("CHANNELS 3 Zrotation Xrotation Yrotation",
                                              "CHANNELS 3 Zrotation Xrotation Xrotation", 1),
                          r"line 9.*listed twice"),
    "missing_close_brace": (lambda t: t.replace("\t\t\t}\n\t\t}\n\t}", "\t\t\t}\n\t\t}", 1), r"unbalanced braces"),
    "extra_close_brace": (lambda t: t.replace("MOTION", "}\nMOTION"), r"line 30.*unbalanced braces"),
    "missing_open_brace": (lambda t: t.replace("JOINT Spine\n\t{", "JOINT Spine"), r"line 7.*expected '\{'.*found 'OFFSET'"),
    "missing_hierarchy": (lambda t: t.replace("HIERARCHY\n", ""), r"line 1.*missing HIERARCHY.*'ROOT'"),
    "missing_motion": (lambda t: t.split("MOTION")[0], r"missing MOTION"),
    "missing_frames_line": (lambda t: t.replace("Frames: 3\n", ""), r"line 31.*expected 'Frames: N'"),
    "zero_frames": (lambda t: t.replace("Frames: 3", "Frames: 0"), r"line 31.*positive frame count.*0"),
    "negative_frames": (lambda t: t.replace("Frames: 3", "Frames: -3"), r"positive frame count"),
    "zero_frame_time": (lambda t: t.replace("Frame Time: 0.5", "Frame Time: 0"), r"line 32.*positive frame time"),
    "negative_frame_time": (lambda t: t.replace("Frame Time: 0.5", "Frame Time: -0.5"), r"positive frame time"),
    "nan_frame_time": (lambda t: t.replace("Frame Time: 0.5", "Frame Time: nan"), r"positive frame time"),
    "no_root": (lambda t: "HIERARCHY\nMOTION\nFrames: 1\nFrame Time: 0.1\n1\n", r"expected a ROOT"),
    "no_joint_name": (lambda t: t.replace("JOINT Spine", "JOINT"), r"line 6.*joint name"),
    "no_offset": (lambda t: t.replace("\t\tOFFSET 10 0 0\n", ""), r"line 20.*no OFFSET"),
    "truncated_mid_line": (lambda t: t[: t.rindex("30") ], r"expected 15 values"),
    "empty": (lambda t: "", r"empty file"),
    "whitespace_only": (lambda t: " \n\t\r\n", r"empty file"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_malformed_files_raise_bvh_error_naming_file(case, tmp_path):
    make, pattern = BROKEN[case]
    path = tmp_path / f"broken_{case}.bvh"
    path.write_text(make(TINY.read_text()))
    with pytest.raises(bvh.BVHError) as info:
        bvh.load(path)
    message = str(info.value)
    assert str(path) in message
    assert re.search(pattern, message), message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("garbage", [b"\x00\x01\x02binary\xff\xfe", bytes(range(256)) * 4, b"\xff\xfe\xfd garbage",
                                     b"HIERARCHY\nROOT \xe9\xff\xfe\n"])
def test_binary_garbage_raises_bvh_error(garbage, tmp_path):
    path = tmp_path / "garbage.bvh"
    path.write_bytes(garbage)
    with pytest.raises(bvh.BVHError, match=re.escape(str(path))):
        bvh.load(path)


def test_garbage_appended_to_valid_file(tmp_path):
    path = tmp_path / "tail.bvh"
    path.write_bytes(TINY.read_bytes() + b"\x00\x07\xff" * 10)
    with pytest.raises(bvh.BVHError, match="tail.bvh"):
        bvh.load(path)
    path.write_bytes(TINY.read_bytes() + "\u00e9\u00e8 \u2603\n".encode())
    with pytest.raises(bvh.BVHError, match="tail.bvh.*line 36"):
        bvh.load(path)


def test_latin1_joint_name_is_text(tmp_path):
    path = tmp_path / "latin1.bvh"
    path.write_bytes(TINY.read_text().replace("Leg_L", "Jamb\u00e9_L").encode("latin-1"))
    assert bvh.load(path).names[3] == "Jamb\u00e9_L"


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        bvh.load(tmp_path / "nope.bvh")


def test_scale_detection_ignores_the_pose_of_the_first_frame(tmp_path):
    """A curled-up first frame (as a generated motion may start) must not change the detected unit."""
    from pfnn_core.math.quat import quat_from_angle_axis
    motion = bvh.load(Path(__file__).resolve().parents[1] / "assets" / "bvh" / "bandai-namco-ds2"
                      / "dataset-2_walk_normal_001.bvh.gz")
    rng = np.random.default_rng(0)
    axes = rng.normal(size=(motion.num_joints, 3))
    axes /= np.linalg.norm(axes, axis=-1, keepdims=True)
    motion.rotations[0] = quat_from_angle_axis(np.full(motion.num_joints, 2.5), axes)
    path = tmp_path / "curled.bvh"
    bvh.save(motion, path)
    assert bvh.load(path).scale == pytest.approx(0.01)


def test_compressed_files_load_like_the_original_and_save_compressed(tmp_path, bundled_bvh_files):
    import gzip

    packed = bundled_bvh_files[0]
    plain = tmp_path / (bvh.clip_name(packed) + ".bvh")
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    a, b = bvh.load(packed), bvh.load(plain)
    assert np.array_equal(a.rotations, b.rotations) and np.array_equal(a.positions, b.positions)
    out = tmp_path / "again.bvh.gz"
    bvh.save(a, out)
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    back = bvh.load(out)
    assert np.allclose(back.global_positions(), a.global_positions(), atol=1e-4)


def test_bvh_file_names_and_folders(tmp_path):
    for name in ("a.bvh", "b.BVH", "c.bvh.gz", "d.Bvh.GZ", "e.gz", "f.txt"):
        (tmp_path / "sub" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "sub" / name).write_text("x")
    assert [p.name for p in bvh.find_files(tmp_path)] == ["a.bvh", "b.BVH", "c.bvh.gz", "d.Bvh.GZ"]
    assert bvh.find_files(tmp_path, recursive=False) == []
    assert bvh.clip_name("x/dataset-2_walk_normal_001.bvh.gz") == "dataset-2_walk_normal_001"
    assert bvh.clip_name("walk.BVH") == "walk"


def test_corrupt_gzip_names_the_file(tmp_path, bundled_bvh_files):
    broken = tmp_path / "broken.bvh.gz"
    broken.write_bytes(bundled_bvh_files[0].read_bytes()[:500])
    with pytest.raises(bvh.BVHError, match="broken.bvh.gz: corrupt gzip data"):
        bvh.load(broken)


# ---- structural oddities (most found by tests/test_fuzz_bvh.py's generated hierarchies) ---------

def _chain_text(count: int, channels: str = "CHANNELS 1 Zrotation", offset: str = "0 1 0") -> str:
    lines = ["HIERARCHY"]
    for j in range(count):
        lines += [("ROOT" if j == 0 else "JOINT") + f" j{j}", "{", f"OFFSET {offset}", channels]
    values = " ".join(["10"] * count * len(channels.split()[2:]))
    return "\n".join(lines + ["}"] * count + ["MOTION", "Frames: 1", "Frame Time: 0.1", values]) + "\n"


def test_a_hierarchy_deeper_than_the_recursion_limit_loads_and_saves(tmp_path):
    path = tmp_path / "deep.bvh"
    path.write_text(_chain_text(3000))
    motion = bvh.load(path, scale=1.0)
    assert motion.num_joints == 3000 and motion.parents.tolist() == [-1] + list(range(2999))
    np.testing.assert_allclose(motion.global_positions()[0, -1, 1] > 0, True)
    bvh.save(motion, tmp_path / "again.bvh")
    assert_same_motion(bvh.load(tmp_path / "again.bvh", scale=1.0), motion, atol=1e-6)


def test_a_wide_skeleton_loads_in_linear_time(tmp_path):
    """Unit detection compared every pair of extremities: 3,000 fingers took minutes."""
    lines = ["HIERARCHY", "ROOT r", "{", "OFFSET 0 0 0", "CHANNELS 1 Yrotation"]
    for j in range(3000):
        lines += [f"JOINT f{j}", "{", f"OFFSET {j % 7} 1 0", "End Site", "{", "OFFSET 0 1 0", "}", "}"]
    path = tmp_path / "wide.bvh"
    path.write_text("\n".join(lines + ["}", "MOTION", "Frames: 1", "Frame Time: 0.1", "0"]) + "\n")
    started = time.perf_counter()
    motion = bvh.load(path)
    assert time.perf_counter() - started < 2.0
    # The longest path between two extremities runs finger - root - finger through the two longest
    # fingers, 2 * (sqrt(6^2 + 1) + 1) = 14.2 units: 0.36 m in inches is the unit nearest 2 m.
    assert motion.scale == 0.0254


@pytest.mark.parametrize("axes, angles", [("Xrotation Yrotation", "10 91"), ("Zrotation Xrotation", "-30 90"),
                                          ("Yrotation Zrotation", "170 -135"), ("Yrotation", "179.5")])
def test_partial_rotation_channels_round_trip_past_ninety_degrees(axes, angles, tmp_path):
    """Two rotation channels were written through a three-axis decomposition: past 90 degrees (and at
    90) the turn moved onto the missing axis and the saved file lost it."""
    text = TINY.read_text().replace("CHANNELS 3 Xrotation Yrotation Zrotation", f"CHANNELS {len(axes.split())} {axes}")
    lines = text.splitlines()
    start = lines.index("Frame Time: 0.5") + 1
    for i in range(start, len(lines)):
        values = lines[i].split()
        lines[i] = " ".join(values[:9] + angles.split() + values[12:])
    (tmp_path / "p.bvh").write_text("\n".join(lines) + "\n")
    motion = bvh.load(tmp_path / "p.bvh", scale=1.0)
    order = "".join(a[0] for a in axes.split())
    expected = quat_from_euler(np.radians([[float(v) for v in angles.split()] + [0.0] * (3 - len(order))] * 3),
                               order + "".join(a for a in "XYZ" if a not in order))
    np.testing.assert_allclose(np.abs(np.sum(motion.rotations[:, 2] * expected, axis=-1)), 1.0, atol=1e-12)
    bvh.save(motion, tmp_path / "p2.bvh")
    assert_same_motion(bvh.load(tmp_path / "p2.bvh", scale=1.0), motion, atol=1e-6)


STRUCTURAL = {
    "duplicate_joint_name": (lambda t: t.replace("JOINT Leg_L", "JOINT Spine"),
                             r"line 20: joint name 'Spine' is used twice \(first on line 6\)"),
    "second_root": (lambda t: t.replace("MOTION", "ROOT Prop\n{\n\tOFFSET 0 0 0\n}\nMOTION"), r"line 30: a second ROOT"),
    "brace_in_name": (lambda t: t.replace("JOINT Head", "JOINT He}ad"), r"line 10: expected '\{' after joint 'He', found '\}'"),
    "channel_count_of_5000_digits": (
        lambda t: t.replace("CHANNELS 3 Zrotation Xrotation Yrotation", "CHANNELS " + "9" * 5000 + " Zrotation", 1),
        r"line 9: CHANNELS declares 9+ channels, found 1 names"),
    "frame_count_of_5000_digits": (lambda t: t.replace("Frames: 3", "Frames: " + "9" * 5000),
                                   r"line 31: expected an integer frame count"),
    "subnormal_frame_time": (lambda t: t.replace("Frame Time: 0.5", "Frame Time: 1e-320"),
                             r"line 32: expected a positive frame time"),
    "hour_long_frame_time": (lambda t: t.replace("Frame Time: 0.5", "Frame Time: 7200"),
                             r"line 32: expected a positive frame time"),
    "offset_near_float_max": (lambda t: t.replace("OFFSET 0 10 0", "OFFSET 0 1e308 0"),
                              r"line 8: expected a length within \+-1e\+09"),
    "position_near_float_max": (lambda t: _replace_frame(t, 1, "1 1e300 3 90 0 0 0 0 0 90 0 0 0 0 0"),
                                r"line 34: expected positions within"),
}


@pytest.mark.parametrize("case", sorted(STRUCTURAL))
def test_structural_oddities_raise_bvh_error_naming_file_and_line(case, tmp_path):
    make, pattern = STRUCTURAL[case]
    path = tmp_path / f"odd_{case}.bvh"
    path.write_text(make(TINY.read_text()))
    with pytest.raises(bvh.BVHError) as info:
        bvh.load(path)
    assert str(path) in str(info.value) and re.search(pattern, str(info.value)), str(info.value)


def test_frames_of_many_channel_less_joints_are_refused_before_allocating(tmp_path):
    """2,000 joints without channels and 200,000 one-number frames: 22 GB of arrays from 600 kB."""
    lines = ["HIERARCHY", "ROOT r", "{", "OFFSET 0 0 0", "CHANNELS 1 Xposition"]
    lines += [f"JOINT j{j}\n{{\nOFFSET 0 1 0\n}}" for j in range(2000)]
    path = tmp_path / "bomb.bvh"
    path.write_text("\n".join(lines + ["}", "MOTION", "Frames: 200000", "Frame Time: 0.1"] + ["0"] * 200000) + "\n")
    tracemalloc.start()
    try:
        with pytest.raises(bvh.BVHError, match=r"200000 frames of 2001 joints would need \d+ MiB of arrays"):
            bvh.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * path.stat().st_size


def test_a_gzip_bomb_stops_at_the_limit_and_gzip_members_join():
    text = TINY.read_bytes()
    with pytest.raises(bvh.BVHError, match="decompresses to more than 1000 bytes"):
        bvh_parse.gunzip(gzip.compress(b"0 " * 100_000), "bomb.bvh.gz", limit=1000)
    assert bvh_parse.gunzip(gzip.compress(text[:100]) + gzip.compress(text[100:]), "two.bvh.gz") == text
    with pytest.raises(bvh.BVHError, match="other data after the compressed stream"):
        bvh_parse.gunzip(gzip.compress(text) + b"junk", "tail.bvh.gz")


def test_a_large_file_of_garbage_fails_at_its_first_word_without_holding_its_words(tmp_path):
    path = tmp_path / "garbage.bvh"
    path.write_bytes(b"word " * 4_000_000)  # 20 MB, no MOTION
    tracemalloc.start()
    try:
        with pytest.raises(bvh.BVHError, match="line 1: missing HIERARCHY"):
            bvh.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * path.stat().st_size


def test_check_motion_names_what_cannot_be_a_skeleton():
    good = bvh.load(TINY)
    bvh.check_motion(good)
    for change, pattern in ((lambda m: setattr(m, "parents", np.array([-1, 0, 3, 0])), "parents"),
                            (lambda m: m.names.__setitem__(3, "Hips"), "share a name"),
                            (lambda m: m.names.__setitem__(3, "Leg  L"), "cannot be written"),
                            (lambda m: m.channels.__setitem__(1, ["Xrotation", "Xrotation"]), "at most once"),
                            (lambda m: m.rotations.__setitem__((0, 1), [2.0, 0, 0, 0]), "unit quaternions"),
                            (lambda m: m.positions.__setitem__((1, 2, 0), np.inf), "positions hold NaN"),
                            (lambda m: setattr(m, "frame_time", 0.0), "frame time"),
                            (lambda m: m.end_sites.__setitem__(9, np.zeros(3)), "End Site of joint 9")):
        motion = good.copy()
        change(motion)
        with pytest.raises(bvh.BVHError, match=pattern):
            bvh.check_motion(motion)
