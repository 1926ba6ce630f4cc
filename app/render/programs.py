"""The GLSL programs: one file per program in `shaders/`, split with `#if defined VERTEX_SHADER` /
`FRAGMENT_SHADER`, `#include "file"` for shared code and extra `#define`s for variants such as
`SHADOW_PASS`; and whether the GL is a software rasteriser (which changes what a frame can afford)."""

from pathlib import Path

import moderngl

SHADER_DIR = Path(__file__).resolve().parents[2] / "shaders"


def load_program(ctx: moderngl.Context, path: Path, defines=()) -> moderngl.Program:
    """Compile a single-file GLSL program (the `#version` line stays first); `#include "name"` lines
    are replaced by that file from the same folder, `defines` are added as `#define NAME`."""
    path = Path(path)
    lines = []
    for line in path.read_text().splitlines():
        if line.startswith("#include"):
            lines += (path.parent / line.split('"')[1]).read_text().splitlines()
        else:
            lines.append(line)
    version, body = lines[0], "\n".join(lines[1:])
    extra = "".join(f"#define {name}\n" for name in defines)

    def stage(define):
        return f"{version}\n#define {define}\n{extra}{body}"

    return ctx.program(vertex_shader=stage("VERTEX_SHADER"), fragment_shader=stage("FRAGMENT_SHADER"))



def is_software_renderer(ctx: moderngl.Context) -> bool:
    renderer = ctx.info.get("GL_RENDERER", "").lower()
    return any(name in renderer for name in ("llvmpipe", "softpipe", "swrast", "software"))
