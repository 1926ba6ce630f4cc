"""Reading a BVH file's text: `parse(data, path_name) -> ParsedBVH` (the hierarchy, the MOTION numbers
[F, C] and the frame time), `gunzip` and `BVHError`. `bvh.load` turns the result into a `Motion`.

Every malformed input raises `BVHError` naming the file and, where there is one, the line and what
was expected versus found; nothing else escapes, whatever the bytes. The hierarchy is read word by
word without recursion (any depth) and without holding the words in a list (a huge file of garbage
fails at its first word); the MOTION numbers are parsed with one numpy call, and a slower line-by-line
pass runs only to explain a failure. Sizes are bounded before anything is allocated: the text
(`MAX_TEXT_BYTES`), the arrays a file can ask for per byte of numbers (`MAX_ARRAY_BYTES_PER_BYTE`),
lengths (`MAX_LENGTH`) and the frame time (`FRAME_TIME_RANGE`).
"""
from __future__ import annotations

import math
import re
import zlib
from typing import NamedTuple

import numpy as np

CHANNEL_NAMES = ("Xposition", "Yposition", "Zposition", "Xrotation", "Yrotation", "Zrotation")
CANONICAL_CHANNEL = {name.lower(): name for name in CHANNEL_NAMES}
MAX_TEXT_BYTES = 2 * 2**30  # a BVH text (decompressed) larger than this is refused: no take is near it
# The Motion arrays (rotations and positions, 56 bytes per joint and frame) may be at most this many
# times the bytes of the MOTION numbers plus the floor: a real file is 1-5x, a file of 5,000
# channel-less joints and a million empty-ish frames would ask for gigabytes from a few megabytes.
MAX_ARRAY_BYTES_PER_BYTE = 64
ARRAY_BYTES_FLOOR = 32 * 2**20
MAX_LENGTH = 1e9  # file units: any OFFSET or position channel beyond this is not a skeleton (1000 km in mm)
FRAME_TIME_RANGE = (1e-6, 3600.0)  # seconds: a million frames per second to one frame an hour
_MAX_HEADER_LINES = 64
_TOKEN = re.compile(r"[{}]|[^\s{}]+")
_MOTION_KEYWORD = re.compile(rb"^[ \t]*MOTION[ \t]*\r?$", re.MULTILINE | re.IGNORECASE)
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_HIGH_BYTES = bytes(range(128, 256))
_ARRAY_BYTES_PER_JOINT_FRAME = 56  # float64 quaternion + translation


class BVHError(ValueError):
    """A BVH file that cannot be read; the message names the file and the line."""


class Hierarchy(NamedTuple):
    names: list[str]
    parents: np.ndarray          # [J] int, -1 for the root
    offsets: np.ndarray          # [J, 3] file units
    channels: list[list[str]]    # canonical channel names per joint, file order
    end_sites: dict              # joint -> End Site offset [3], file units


class ParsedBVH(NamedTuple):
    hierarchy: Hierarchy
    values: np.ndarray           # [F, C] the MOTION numbers, channels in file order
    frame_time: float            # seconds


def gunzip(data: bytes, path_name: str, limit: int = MAX_TEXT_BYTES) -> bytes:
    """The text of gzip data (every member of a concatenated stream); BVHError for corrupt or
    truncated data and for more than `limit` bytes of text (a gzip bomb stops there)."""
    pieces, size = [], 0
    while data:
        stream = zlib.decompressobj(wbits=31)
        try:
            piece = stream.decompress(data, limit - size + 1)
        except zlib.error as exc:
            raise BVHError(f"{path_name}: corrupt gzip data ({exc})") from None
        size += len(piece)
        if size > limit:
            raise BVHError(f"{path_name}: the gzip data decompresses to more than {limit} bytes")
        if not stream.eof:
            raise BVHError(f"{path_name}: corrupt gzip data (the stream is truncated)")
        pieces.append(piece)
        data = stream.unused_data.lstrip(b"\x00")  # gzip allows zero padding between members
        if data and not data.startswith(b"\x1f\x8b"):
            raise BVHError(f"{path_name}: corrupt gzip data (other data after the compressed stream)")
    return b"".join(pieces)


def parse(data: bytes, path_name: str) -> ParsedBVH:
    """A BVH file's bytes (already decompressed) read into arrays; BVHError for anything malformed."""
    if not data.strip():
        raise BVHError(f"{path_name}: empty file")
    if len(data) > MAX_TEXT_BYTES:
        raise BVHError(f"{path_name}: {len(data)} bytes is larger than any BVH take (at most {MAX_TEXT_BYTES})")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise BVHError(f"{path_name}: line {line}: binary data (NUL byte), not a BVH text file")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\n" not in data:
        data = data.replace(b"\r", b"\n")  # classic Mac line endings

    motion_match = _MOTION_KEYWORD.search(data)
    header = _decode_header(data[:motion_match.start()] if motion_match else data, path_name)
    hierarchy = _HierarchyParser(header, path_name, has_motion=motion_match is not None).parse()
    if motion_match is None:
        raise BVHError(f"{path_name}: missing MOTION section after the HIERARCHY")
    motion_line = header.count("\n") + 1
    values, frame_time = _parse_motion(data[motion_match.end():], motion_line, hierarchy, path_name)
    return ParsedBVH(hierarchy, values, frame_time)


def _decode_header(header_bytes: bytes, path_name: str) -> str:
    try:
        header = header_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A stray Latin-1 letter in a joint name is text; a header full of high bytes is not.
        high = len(header_bytes) - len(header_bytes.translate(None, _HIGH_BYTES))
        if high > 0.01 * len(header_bytes):
            line = header_bytes.count(b"\n", 0, exc.start) + 1
            raise BVHError(f"{path_name}: line {line}: undecodable bytes, not a BVH text file") from None
        header = header_bytes.decode("latin-1")
    bad_char = _CONTROL_CHARS.search(header)
    if bad_char:
        line = header.count("\n", 0, bad_char.start()) + 1
        raise BVHError(f"{path_name}: line {line}: control character {bad_char.group()!r}, not a BVH text file")
    return header


class _Words:
    """The words of the HIERARCHY text with their line numbers, read one at a time; braces are words
    of their own. After the last word, `peek` and `take` return `end` (MOTION or end of file)."""

    def __init__(self, text: str, end: tuple[str, int]):
        self._words = _numbered_words(text)
        self._ahead = None
        self.end = end

    def peek(self) -> tuple[str, int]:
        if self._ahead is None:
            self._ahead = next(self._words, self.end)
        return self._ahead

    def take(self) -> tuple[str, int]:
        word = self.peek()
        if word is not self.end:
            self._ahead = None  # the end stays: every later take returns it again
        return word

    def rest_of_line(self, line: int, stop: str) -> list[str]:
        """The next words on `line`, up to (not including) a word in `stop`."""
        found = []
        while True:
            word, word_line = self.peek()
            if self._ahead is self.end or word_line != line or word in stop:
                return found
            found.append(self.take()[0])


def _numbered_words(text: str):
    """(word, line) for each word of `text`, lazily."""
    line, counted = 1, 0
    for match in _TOKEN.finditer(text):
        start = match.start()
        line += text.count("\n", counted, start)
        counted = start
        yield match.group(), line


class _HierarchyParser:
    """HIERARCHY, one ROOT and its joints, read with an explicit stack of open joints."""

    def __init__(self, header: str, path_name: str, has_motion: bool):
        self.path_name = path_name
        self.end_line = header.count("\n") + 1
        self.words = _Words(header, ("MOTION" if has_motion else "end of file", self.end_line))
        self.names: list[str] = []
        self.first_line: dict[str, int] = {}  # joint name -> the line that named it
        self.parents: list[int] = []
        self.offsets: list[list[float] | None] = []
        self.channels: list[list[str]] = []
        self.end_sites: dict[int, np.ndarray] = {}

    def fail(self, line: int, message: str):
        raise BVHError(f"{self.path_name}: line {line}: {message}")

    def parse(self) -> Hierarchy:
        first, first_line = self.words.peek()
        if first.upper() != "HIERARCHY":
            self.fail(first_line, f"missing HIERARCHY: expected 'HIERARCHY' as the first word, found {first!r}")
        self.words.take()
        while self.words.peek() is not self.words.end:
            word, line = self.words.peek()
            if word.upper() == "ROOT" and self.names:
                self.fail(line, f"a second ROOT: this reader takes one skeleton per file (the first ROOT, "
                                f"{self.names[0]!r}, ends before this line)")
            if word.upper() == "ROOT":
                self.joint_tree()
            elif word == "}":
                self.fail(line, "unbalanced braces: '}' with no open joint")
            else:
                self.fail(line, f"expected ROOT, found {word!r}")
        if not self.names:
            self.fail(self.end_line, "expected a ROOT joint in the HIERARCHY, found none")
        return Hierarchy(self.names, np.array(self.parents, dtype=np.int64), np.array(self.offsets, dtype=float),
                         self.channels, self.end_sites)

    def joint_tree(self) -> None:
        """The ROOT at the next word and everything inside its braces."""
        stack = [self.open_joint(-1)]
        while stack:
            index = stack[-1]
            word, line = self.words.peek()
            keyword = word.upper()
            if keyword == "OFFSET":
                self.words.take()
                self.offsets[index] = self.offset(f"OFFSET of {self.names[index]!r}")
            elif keyword == "CHANNELS":
                self.channel_list(index)
            elif keyword == "JOINT":
                stack.append(self.open_joint(index))
            elif keyword == "END":
                self.end_site(index)
            elif word == "}":
                self.words.take()
                if self.offsets[index] is None:
                    self.fail(self.first_line[self.names[index]], f"joint {self.names[index]!r} has no OFFSET")
                stack.pop()
            else:
                self.fail(line, f"unbalanced braces or bad keyword: expected OFFSET, CHANNELS, JOINT, End Site "
                                f"or '}}' to close joint {self.names[index]!r} (opened line "
                                f"{self.first_line[self.names[index]]}), found {word!r}")

    def open_joint(self, parent: int) -> int:
        """ROOT/JOINT NAME {: the new joint's index. A name is every word up to the brace on its line."""
        _, line = self.words.take()
        parts = self.words.rest_of_line(line, "{}")
        if not parts:
            self.fail(line, "expected a joint name after ROOT/JOINT, found nothing")
        name = " ".join(parts)
        if name in self.first_line:
            self.fail(line, f"joint name {name!r} is used twice (first on line {self.first_line[name]}); "
                            f"joints are found by name, so each needs its own")
        self.first_line[name] = line
        self.names.append(name)
        self.parents.append(parent)
        self.offsets.append(None)
        self.channels.append([])
        self.expect_open(f"joint {name!r}")
        return len(self.names) - 1

    def expect_open(self, owner: str) -> None:
        word, line = self.words.take()
        if word != "{":
            self.fail(line, f"expected '{{' after {owner}, found {word!r}")

    def offset(self, what: str) -> list[float]:
        values = []
        for _ in range(3):
            word, line = self.words.take()
            try:
                value = float(word)
            except ValueError:
                self.fail(line, f"expected a number for {what}, found {word!r}")
            if not math.isfinite(value):
                self.fail(line, f"expected a finite number for {what}, found {word!r}")
            if abs(value) > MAX_LENGTH:
                self.fail(line, f"expected a length within +-{MAX_LENGTH:g} file units for {what}, found {word!r}")
            values.append(value)
        return values

    def channel_list(self, index: int) -> None:
        self.words.take()
        count_word, count_line = self.words.take()
        if not re.fullmatch(r"[0-9]+", count_word):
            self.fail(count_line, f"expected a channel count after CHANNELS, found {count_word!r}")
        found = self.words.rest_of_line(count_line, "{}")
        if len(count_word.lstrip("0")) > 3 or int(count_word) != len(found):
            self.fail(count_line, f"CHANNELS declares {count_word.lstrip('0') or '0'} channels, found {len(found)} names")
        for name in found:
            canonical = CANONICAL_CHANNEL.get(name.lower())
            if canonical is None:
                self.fail(count_line, f"unknown channel name {name!r}, expected one of {', '.join(CHANNEL_NAMES)}")
            if canonical in self.channels[index]:
                self.fail(count_line, f"channel {canonical} listed twice for joint {self.names[index]!r}")
            self.channels[index].append(canonical)

    def end_site(self, index: int) -> None:
        self.words.take()
        site_word, site_line = self.words.take()
        if site_word.upper() != "SITE":
            self.fail(site_line, f"expected 'Site' after 'End', found {site_word!r}")
        self.expect_open("End Site")
        offset_word, offset_line = self.words.take()
        if offset_word.upper() != "OFFSET":
            self.fail(offset_line, f"expected OFFSET in End Site, found {offset_word!r}")
        self.end_sites.setdefault(index, np.array(self.offset("End Site OFFSET")))
        close_word, close_line = self.words.take()
        if close_word != "}":
            self.fail(close_line, f"unbalanced braces: expected '}}' to close End Site, found {close_word!r}")


def _parse_motion(body: bytes, motion_line: int, hierarchy: Hierarchy, path_name: str):
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
    if not re.fullmatch(r"[-+]?[0-9]{1,15}", match.group(1)):
        raise BVHError(f"{path_name}: line {line_no}: expected an integer frame count, found {match.group(1)!r}")
    num_frames = int(match.group(1))
    if num_frames <= 0:
        raise BVHError(f"{path_name}: line {line_no}: expected a positive frame count, found {num_frames}")
    frames_line_no = line_no

    time_line = next_nonblank()
    match = re.fullmatch(r"frame\s*time\s*:\s*(\S+)", time_line or "", re.IGNORECASE)
    if not match:
        raise BVHError(f"{path_name}: line {line_no}: expected 'Frame Time: T' after Frames, found {time_line!r}")
    try:
        frame_time = float(match.group(1))
    except ValueError:
        frame_time = float("nan")
    if not (math.isfinite(frame_time) and FRAME_TIME_RANGE[0] <= frame_time <= FRAME_TIME_RANGE[1]):
        raise BVHError(f"{path_name}: line {line_no}: expected a positive frame time in seconds (from "
                       f"{FRAME_TIME_RANGE[0]:g} to {FRAME_TIME_RANGE[1]:g}), found {match.group(1)!r}")

    data = b"\n".join(text_lines[index:])
    _check_array_size(num_frames, len(hierarchy.names), len(data), frames_line_no, path_name)
    first_data_line = line_no + 1
    num_channels = sum(len(c) for c in hierarchy.channels)
    values = _fast_numbers(data, num_frames, num_channels)
    if values is None:
        _explain_bad_numbers(data, first_data_line, num_frames, num_channels, path_name)
    values = values.reshape(num_frames, num_channels)
    _check_lengths(values, hierarchy.channels, data, first_data_line, path_name)
    return values, frame_time


def _check_array_size(num_frames: int, num_joints: int, data_bytes: int, line: int, path_name: str) -> None:
    wanted = num_frames * num_joints * _ARRAY_BYTES_PER_JOINT_FRAME
    if wanted > ARRAY_BYTES_FLOOR + MAX_ARRAY_BYTES_PER_BYTE * data_bytes:
        raise BVHError(f"{path_name}: line {line}: {num_frames} frames of {num_joints} joints would need "
                       f"{wanted / 2**20:.0f} MiB of arrays, more than {data_bytes} bytes of numbers can hold")


def _check_lengths(values: np.ndarray, channels: list[list[str]], data: bytes, first_line: int, path_name: str):
    columns = [c for c, name in enumerate(name for chans in channels for name in chans) if name.endswith("position")]
    if not columns or values.size == 0:
        return
    too_long = np.abs(values[:, columns]).max(axis=1) > MAX_LENGTH
    if too_long.any():
        frame = int(np.argmax(too_long))
        line = first_line + _line_of_frame(data, frame)
        raise BVHError(f"{path_name}: line {line}: expected positions within +-{MAX_LENGTH:g} file units, "
                       f"found {np.abs(values[frame, columns]).max():g}")


def _line_of_frame(data: bytes, frame: int) -> int:
    """How many lines after the first numbers line frame `frame` (0-based, blank lines skipped) is."""
    seen = -1
    for offset, raw in enumerate(data.split(b"\n")):
        if raw.strip():
            seen += 1
            if seen == frame:
                return offset
    return 0


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
