"""BVH motion files: ``load``, ``save``, the ``Motion`` arrays and ``BVHError``.

A BVH file is a HIERARCHY (joints with OFFSETs and CHANNELS, End Sites) and a MOTION block (frame
count, frame time, one line of channel values per frame). Rotation channels are Euler angles in degrees
applied in channel order as intrinsic rotations (R = R_first @ R_second @ R_third); position channels
replace the joint's offset for that axis. Quaternion and unit conventions are those of ``quat.py``.

Every malformed input raises ``BVHError`` naming the file and, where there is one, the line and what
was expected versus found. The MOTION numbers are parsed with one numpy call; a slower line-by-line
pass runs only to explain a failure.
"""
from __future__ import annotations

import copy as _copy
import gzip
import math
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core.math.quat import quat_mul, quat_to_euler
from pfnn_core.motion.kinematics import forward_kinematics

CHANNEL_NAMES = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
_CANONICAL_CHANNEL = {name.lower(): name for name in CHANNEL_NAMES}
_AXIS = {"X": 0, "Y": 1, "Z": 2}
# Length units a BVH skeleton is commonly written in, as metres per file unit.
_UNIT_SCALES = {"m": 1.0, "cm": 0.01, "in": 0.0254, "mm": 0.001}
_TYPICAL_SPAN_M = 2.0  # hand-to-foot path along the bones of an adult, metres
_MAX_HEADER_LINES = 64
_HEADER_TOKEN = re.compile(r"[{}]|[^\s{}]+")
_MOTION_KEYWORD = re.compile(rb"^[ \t]*MOTION[ \t]*\r?$", re.MULTILINE | re.IGNORECASE)
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


BVH_SUFFIXES = (".bvh", ".bvh.gz")  # compared case-insensitively


class BVHError(ValueError):
    """A BVH file that cannot be read; the message names the file and the line."""


def is_bvh_path(path) -> bool:
    """True for a name ending in .bvh or .bvh.gz (any case): the one rule for what counts as a BVH file."""
    return str(path).lower().endswith(BVH_SUFFIXES)


def find_files(folder, recursive: bool = True) -> list[Path]:
    """The BVH files (.bvh and .bvh.gz, any case) in a folder and, by default, its subfolders, sorted."""
    folder = Path(folder)
    candidates = folder.rglob("*") if recursive else folder.iterdir()
    return sorted(p for p in candidates if p.is_file() and is_bvh_path(p.name))


def clip_name(path) -> str:
    """A file's clip name: its file name without .bvh / .bvh.gz."""
    name = Path(path).name
    for suffix in sorted(BVH_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return Path(name).stem


def read_bytes(path) -> bytes:
    """A BVH file's bytes, decompressed when the file is gzip data (by its magic bytes, whatever its name)."""
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise BVHError(f"{path}: corrupt gzip data ({exc})") from None
    return data


@dataclass
class Motion:
    """One clip as arrays. Lengths are in motion units (file units * ``scale``)."""

    names: list[str]
    parents: np.ndarray          # [J] int, -1 for a root
    offsets: np.ndarray          # [J, 3] rest offsets from the parent
    channels: list[list[str]]    # per joint, file order, e.g. ['Xposition', ..., 'Yrotation']
    rotations: np.ndarray        # [F, J, 4] local quaternions (w, x, y, z)
    positions: np.ndarray        # [F, J, 3] local translations (position channels, else the offset)
    frame_time: float            # seconds per frame
    end_sites: dict[int, np.ndarray] = field(default_factory=dict)  # joint -> End Site offset
    scale: float = 1.0           # file units * scale = motion units
    source: str = ""

    @property
    def num_frames(self) -> int:
        return int(self.rotations.shape[0])

    @property
    def num_joints(self) -> int:
        return len(self.names)

    @property
    def fps(self) -> float:
        return 1.0 / self.frame_time

    @property
    def duration(self) -> float:
        """Time of the last frame, (frames - 1) * frame_time, in seconds."""
        return (self.num_frames - 1) * self.frame_time

    def global_rotations(self) -> np.ndarray:
        return forward_kinematics(self.rotations, self.positions, self.parents)[0]

    def global_positions(self) -> np.ndarray:
        return forward_kinematics(self.rotations, self.positions, self.parents)[1]

    def copy(self) -> "Motion":
        return _copy.deepcopy(self)

    def joint_index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no joint named {name!r} in {self.source or 'motion'}") from None


def load(path, scale: float | None = None) -> Motion:
    """Read a BVH file. ``scale=None`` converts to metres (unit detected from the skeleton's size),
    a number multiplies every length, ``1.0`` keeps file units."""
    path_name = str(path)
    data = read_bytes(path)
    if not data.strip():
        raise BVHError(f"{path_name}: empty file")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise BVHError(f"{path_name}: line {line}: binary data (NUL byte), not a BVH text file")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\n" not in data:
        data = data.replace(b"\r", b"\n")  # classic Mac line endings

    motion_match = _MOTION_KEYWORD.search(data)
    header_bytes = data[:motion_match.start()] if motion_match else data
    try:
        header = header_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A stray Latin-1 letter in a joint name is text; a header full of high bytes is not.
        if sum(b >= 128 for b in header_bytes) > 0.01 * len(header_bytes):
            line = header_bytes.count(b"\n", 0, exc.start) + 1
            raise BVHError(f"{path_name}: line {line}: undecodable bytes, not a BVH text file") from None
        header = header_bytes.decode("latin-1")
    bad_char = _CONTROL_CHARS.search(header)
    if bad_char:
        line = header.count("\n", 0, bad_char.start()) + 1
        raise BVHError(f"{path_name}: line {line}: control character {bad_char.group()!r}, not a BVH text file")

    skeleton = _parse_hierarchy(header, path_name, has_motion=motion_match is not None)
    if motion_match is None:
        raise BVHError(f"{path_name}: missing MOTION section after the HIERARCHY")
    motion_line = header.count("\n") + 1
    values, frame_time = _parse_motion(data[motion_match.end():], motion_line, skeleton["channels"], path_name)
    return _build_motion(skeleton, values, frame_time, scale, path_name)


def save(motion: Motion, path) -> None:
    """Write ``motion`` as BVH in its original channel orders and file units (lengths / scale);
    gzip-compressed when the path ends in .gz."""
    unit = 1.0 / motion.scale
    children: dict[int, list[int]] = {j: [] for j in range(-1, motion.num_joints)}
    for j, p in enumerate(np.asarray(motion.parents)):
        children[int(p)].append(j)

    lines = ["HIERARCHY"]

    def write_joint(j: int, depth: int) -> None:
        pad = "\t" * depth
        keyword = "ROOT" if motion.parents[j] < 0 else "JOINT"
        lines.append(f"{pad}{keyword} {motion.names[j]}")
        lines.append(pad + "{")
        lines.append(f"{pad}\tOFFSET {_fmt_vec(motion.offsets[j] * unit)}")
        if motion.channels[j]:
            lines.append(f"{pad}\tCHANNELS {len(motion.channels[j])} {' '.join(motion.channels[j])}")
        for c in children[j]:
            write_joint(c, depth + 1)
        if j in motion.end_sites:
            lines.extend([f"{pad}\tEnd Site", pad + "\t{",
                          f"{pad}\t\tOFFSET {_fmt_vec(np.asarray(motion.end_sites[j]) * unit)}", pad + "\t}"])
        lines.append(pad + "}")

    for root in children[-1]:
        write_joint(root, 0)
    lines += ["MOTION", f"Frames: {motion.num_frames}", f"Frame Time: {motion.frame_time:.10g}"]

    columns = []
    for j, chans in enumerate(motion.channels):
        rot_axes = [c[0] for c in chans if c.endswith("rotation")]
        euler = None
        if rot_axes:
            order = "".join(rot_axes) + "".join(a for a in "XYZ" if a not in rot_axes)
            euler = np.degrees(quat_to_euler(motion.rotations[:, j], order))
        for c in chans:
            if c.endswith("position"):
                columns.append(motion.positions[:, j, _AXIS[c[0]]] * unit)
            else:
                columns.append(euler[:, rot_axes.index(c[0])])
    table = np.stack(columns, axis=1) if columns else np.zeros((motion.num_frames, 0))
    row_format = " ".join(["%.6f"] * table.shape[1])
    body = "\n".join(row_format % tuple(row) for row in table.tolist())
    text = ("\n".join(lines) + "\n" + body + "\n").encode("utf-8")
    if str(path).lower().endswith(".gz"):
        text = gzip.compress(text, mtime=0)
    Path(path).write_bytes(text)


def _fmt_vec(v) -> str:
    return " ".join(f"{float(x):.6f}" for x in v)


def _parse_hierarchy(header: str, path_name: str, has_motion: bool) -> dict:
    tokens: list[tuple[str, int]] = []
    for line_no, line in enumerate(header.split("\n"), 1):
        words = _HEADER_TOKEN.findall(line) if ("{" in line or "}" in line) else line.split()
        tokens += [(word, line_no) for word in words]
    end_line = header.count("\n") + 1
    pos = 0

    def fail(line: int, message: str):
        raise BVHError(f"{path_name}: line {line}: {message}")

    def peek() -> tuple[str, int]:
        return tokens[pos] if pos < len(tokens) else ("MOTION" if has_motion else "end of file", end_line)

    def take() -> tuple[str, int]:
        nonlocal pos
        tok = peek()
        pos += 1
        return tok

    def number(what: str) -> float:
        tok, line = take()
        try:
            value = float(tok)
        except ValueError:
            fail(line, f"expected a number for {what}, found {tok!r}")
        if not math.isfinite(value):
            fail(line, f"expected a finite number for {what}, found {tok!r}")
        return value

    def expect_open(owner: str) -> None:
        tok, line = take()
        if tok != "{":
            fail(line, f"expected '{{' after {owner}, found {tok!r}")

    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    channels: list[list[str]] = []
    end_sites: dict[int, np.ndarray] = {}

    def parse_joint(parent: int) -> None:
        nonlocal pos
        _, line = take()
        name_parts = []
        while pos < len(tokens) and tokens[pos][1] == line and tokens[pos][0] != "{":
            name_parts.append(tokens[pos][0])
            pos += 1
        if not name_parts:
            fail(line, "expected a joint name after ROOT/JOINT, found nothing")
        index = len(names)
        names.append(" ".join(name_parts))
        parents.append(parent)
        offsets.append(None)
        channels.append([])
        expect_open(f"joint {names[index]!r}")
        while True:
            tok, tok_line = peek()
            keyword = tok.upper()
            if keyword == "OFFSET":
                take()
                offsets[index] = [number(f"OFFSET of {names[index]!r}") for _ in range(3)]
            elif keyword == "CHANNELS":
                take()
                count_tok, count_line = take()
                if not re.fullmatch(r"\d+", count_tok):
                    fail(count_line, f"expected a channel count after CHANNELS, found {count_tok!r}")
                found = []
                while pos < len(tokens) and tokens[pos][1] == count_line and tokens[pos][0] not in "{}":
                    found.append(take()[0])
                if len(found) != int(count_tok):
                    fail(count_line, f"CHANNELS declares {int(count_tok)} channels, found {len(found)} names")
                for ch in found:
                    canonical = _CANONICAL_CHANNEL.get(ch.lower())
                    if canonical is None:
                        fail(count_line, f"unknown channel name {ch!r}, expected one of {', '.join(CHANNEL_NAMES)}")
                    if canonical in channels[index]:
                        fail(count_line, f"channel {canonical} listed twice for joint {names[index]!r}")
                    channels[index].append(canonical)
            elif keyword == "JOINT":
                parse_joint(index)
            elif keyword == "END":
                take()
                site_tok, site_line = take()
                if site_tok.upper() != "SITE":
                    fail(site_line, f"expected 'Site' after 'End', found {site_tok!r}")
                expect_open("End Site")
                offset_tok, offset_line = take()
                if offset_tok.upper() != "OFFSET":
                    fail(offset_line, f"expected OFFSET in End Site, found {offset_tok!r}")
                end_sites.setdefault(index, np.array([number("End Site OFFSET") for _ in range(3)]))
                close_tok, close_line = take()
                if close_tok != "}":
                    fail(close_line, f"unbalanced braces: expected '}}' to close End Site, found {close_tok!r}")
            elif tok == "}":
                take()
                break
            else:
                fail(tok_line, f"unbalanced braces or bad keyword: expected OFFSET, CHANNELS, JOINT, End Site "
                               f"or '}}' to close joint {names[index]!r} (opened line {line}), found {tok!r}")
        if offsets[index] is None:
            fail(line, f"joint {names[index]!r} has no OFFSET")

    first, first_line = peek()
    if first.upper() != "HIERARCHY":
        fail(first_line, f"missing HIERARCHY: expected 'HIERARCHY' as the first word, found {first!r}")
    take()
    while pos < len(tokens):
        tok, line = peek()
        if tok.upper() == "ROOT":
            parse_joint(-1)
        elif tok == "}":
            fail(line, "unbalanced braces: '}' with no open joint")
        else:
            fail(line, f"expected ROOT, found {tok!r}")
    if not names:
        fail(end_line, "expected a ROOT joint in the HIERARCHY, found none")
    return {"names": names, "parents": np.array(parents, dtype=np.int64),
            "offsets": np.array(offsets, dtype=float), "channels": channels, "end_sites": end_sites}


def _parse_motion(body: bytes, motion_line: int, channels: list[list[str]], path_name: str):
    """Frame time and the channel values [F, C] from the bytes after the MOTION line."""
    text_lines = body.split(b"\n", _MAX_HEADER_LINES)  # the header lines; the frames stay in one piece
    consumable = min(len(text_lines), _MAX_HEADER_LINES)
    line_no = motion_line - 1  # piece 0 is the rest of the MOTION line itself
    index = 0

    def next_nonblank():
        nonlocal index, line_no
        while index < consumable:
            raw = text_lines[index]
            index += 1
            line_no += 1
            if raw.strip():
                return raw.decode("utf-8", errors="replace").strip()
        return None

    frames_line = next_nonblank()
    match = re.fullmatch(r"frames\s*:\s*(\S+)", frames_line or "", re.IGNORECASE)
    if not match:
        raise BVHError(f"{path_name}: line {line_no}: expected 'Frames: N' after MOTION, found {frames_line!r}")
    try:
        num_frames = int(match.group(1))
    except ValueError:
        raise BVHError(f"{path_name}: line {line_no}: expected an integer frame count, found {match.group(1)!r}") from None
    if num_frames <= 0:
        raise BVHError(f"{path_name}: line {line_no}: expected a positive frame count, found {num_frames}")

    time_line = next_nonblank()
    match = re.fullmatch(r"frame\s*time\s*:\s*(\S+)", time_line or "", re.IGNORECASE)
    if not match:
        raise BVHError(f"{path_name}: line {line_no}: expected 'Frame Time: T' after Frames, found {time_line!r}")
    try:
        frame_time = float(match.group(1))
    except ValueError:
        frame_time = float("nan")
    if not (math.isfinite(frame_time) and frame_time > 0.0):
        raise BVHError(f"{path_name}: line {line_no}: expected a positive frame time in seconds, found {match.group(1)!r}")

    data = b"\n".join(text_lines[index:])
    first_data_line = line_no + 1
    num_channels = sum(len(c) for c in channels)
    values = _fast_numbers(data, num_frames, num_channels)
    if values is None:
        _explain_bad_numbers(data, first_data_line, num_frames, num_channels, path_name)
    return values.reshape(num_frames, num_channels), frame_time


def _fast_numbers(data: bytes, num_frames: int, num_channels: int):
    """All numbers with one numpy call; None when anything is off (counts per line, non-numbers, NaN)."""
    chars = np.frombuffer(data, dtype=np.uint8)
    if chars.size == 0:
        return None
    is_space = chars <= 32
    token_starts = np.flatnonzero(~is_space & np.concatenate(([True], is_space[:-1])))
    newlines = np.flatnonzero(chars == 10)
    tokens_before_line_end = np.searchsorted(token_starts, newlines)
    tokens_per_line = np.diff(tokens_before_line_end, prepend=0, append=token_starts.size)
    tokens_per_line = tokens_per_line[tokens_per_line > 0]
    if tokens_per_line.size != num_frames or np.any(tokens_per_line != num_channels):
        return None
    try:
        values = np.fromstring(data, dtype=np.float64, sep=" ")
    except ValueError:
        return None
    if values.size != num_frames * num_channels or not np.isfinite(values).all():
        return None
    return values


def _explain_bad_numbers(data: bytes, first_line: int, num_frames: int, num_channels: int, path_name: str):
    frame = 0
    for offset, raw in enumerate(data.split(b"\n")):
        line_no = first_line + offset
        words = raw.split()
        if not words:
            continue
        if frame == num_frames:
            raise BVHError(f"{path_name}: line {line_no}: expected {num_frames} frames as declared by 'Frames:', "
                           f"found more lines of numbers")
        for word in words:
            text = word.decode("utf-8", errors="replace")
            try:
                value = float(text)
            except ValueError:
                raise BVHError(f"{path_name}: line {line_no}: expected a number, found {text!r}") from None
            if not math.isfinite(value):
                raise BVHError(f"{path_name}: line {line_no}: expected a finite number, found {text!r}")
        if len(words) != num_channels:
            raise BVHError(f"{path_name}: line {line_no}: expected {num_channels} values (the channel count "
                           f"of the HIERARCHY), found {len(words)}")
        frame += 1
    if frame < num_frames:
        last_line = first_line + data.count(b"\n")
        raise BVHError(f"{path_name}: line {last_line}: expected {num_frames} frames as "
                       f"declared by 'Frames:', found {frame}")
    raise BVHError(f"{path_name}: line {first_line}: the MOTION numbers could not be parsed")


def _build_motion(skeleton: dict, values: np.ndarray, frame_time: float, scale, path_name: str) -> Motion:
    num_frames = values.shape[0]
    names, parents, offsets = skeleton["names"], skeleton["parents"], skeleton["offsets"]
    channels = skeleton["channels"]
    num_joints = len(names)

    positions = np.repeat(offsets[None], num_frames, axis=0)
    rotations = np.zeros((num_frames, num_joints, 4))
    rotations[..., 0] = 1.0
    pos_joint, pos_axis, pos_col = [], [], []
    rot_groups: dict[str, tuple[list[int], list[list[int]]]] = {}
    col = 0
    for j, chans in enumerate(channels):
        rot_axes, rot_cols = [], []
        for c in chans:
            if c.endswith("position"):
                pos_joint.append(j)
                pos_axis.append(_AXIS[c[0]])
                pos_col.append(col)
            else:
                rot_axes.append(c[0])
                rot_cols.append(col)
            col += 1
        if rot_axes:
            group = rot_groups.setdefault("".join(rot_axes), ([], []))
            group[0].append(j)
            group[1].append(rot_cols)
    if pos_joint:
        positions[:, pos_joint, pos_axis] = values[:, pos_col]
    for axes, (joints, cols) in rot_groups.items():
        half_angles = values[:, np.array(cols)] * (np.pi / 360.0)  # degrees -> half angles, [F, n, len(axes)]
        cos_half, sin_half = np.cos(half_angles), np.sin(half_angles)
        q = None
        for k, axis in enumerate(axes):
            elementary = np.zeros(half_angles.shape[:2] + (4,))
            elementary[..., 0] = cos_half[..., k]
            elementary[..., 1 + _AXIS[axis]] = sin_half[..., k]
            q = elementary if q is None else quat_mul(q, elementary)
        rotations[:, joints] = q

    if scale is None:
        scale = detect_scale(offsets, parents, skeleton["end_sites"])
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0.0):
        raise BVHError(f"{path_name}: scale must be a positive number, got {scale}")
    return Motion(names=list(names), parents=parents, offsets=offsets * scale, channels=channels,
                  rotations=rotations, positions=positions * scale, frame_time=frame_time,
                  end_sites={j: v * scale for j, v in skeleton["end_sites"].items()},
                  scale=scale, source=path_name)


def detect_scale(offsets: np.ndarray, parents: np.ndarray, end_sites: dict) -> float:
    """Metres per file unit, guessed from the skeleton's size alone (never from a pose).

    The size is the longest path along the bones between two extremities (End Sites included): for a
    person that is hand to foot, about 2 m whatever the pose in the file or the up axis (a first frame
    that happens to be folded or lying down cannot fool it). The unit whose conversion lands closest to
    that length in log scale wins; cm, inches and metres are a factor 2.5 or more apart, so the
    guess tolerates proportions well away from typical. A degenerate skeleton keeps file units.
    """
    parents = np.asarray(parents)
    count = len(parents)
    lengths = np.linalg.norm(np.asarray(offsets, dtype=float), axis=-1)
    depth = np.zeros(count)                       # path length from the root along the bones
    for j, parent in enumerate(parents.tolist()):
        if parent >= 0:
            depth[j] = depth[parent] + lengths[j]
    tips = [(j, depth[j]) for j in range(count) if j not in set(parents.tolist())]
    tips += [(j, depth[j] + float(np.linalg.norm(site))) for j, site in end_sites.items()]

    def ancestors(j):
        chain = []
        while j >= 0:
            chain.append(j)
            j = int(parents[j])
        return chain

    chains = {j: ancestors(j) for j, _ in tips}
    longest = 0.0
    for a, (ja, da) in enumerate(tips):
        on_path = set(chains[ja])
        for jb, db in tips[a + 1:]:
            common = next(k for k in chains[jb] + [-1] if k in on_path or k < 0)
            longest = max(longest, da + db - 2.0 * (depth[common] if common >= 0 else 0.0))
    if not (math.isfinite(longest) and longest > 0.0):
        return 1.0
    return min(_UNIT_SCALES.values(), key=lambda s: abs(math.log(longest * s / _TYPICAL_SPAN_M)))
