"""Follow/orbit/zoom camera and the view/projection matrices it produces.

Angles in radians, distances in metres. The camera orbits a target point that follows the character
with halflife damping (exact for any dt), so the view stays smooth when the frame rate changes.
Matrices are numpy float32 [4, 4] in the usual row-major maths layout; `gl_bytes` transposes them for GLSL.
"""

from dataclasses import dataclass, field

import numpy as np

LN2 = 0.69314718056


def damp_factor(halflife: float, dt: float) -> float:
    """Fraction of the remaining gap a halflife damper closes in `dt` seconds."""
    if halflife <= 1e-6:
        return 1.0
    return 1.0 - float(np.exp(-LN2 * dt / halflife))


def look_at(eye: np.ndarray, target: np.ndarray, up=(0.0, 1.0, 0.0)) -> np.ndarray:
    """World -> view matrix of a camera at `eye` looking at `target` (right-handed, -Z forward)."""
    eye = np.asarray(eye, np.float64)
    forward = np.asarray(target, np.float64) - eye
    forward /= max(np.linalg.norm(forward), 1e-9)
    right = np.cross(forward, up)
    right /= max(np.linalg.norm(right), 1e-9)
    true_up = np.cross(right, forward)
    view = np.eye(4)
    view[0, :3], view[1, :3], view[2, :3] = right, true_up, -forward
    view[:3, 3] = -view[:3, :3] @ eye
    return view.astype(np.float32)


def perspective(fov_y: float, aspect: float, near: float, far: float) -> np.ndarray:
    """OpenGL clip-space projection (depth -1..1)."""
    f = 1.0 / np.tan(fov_y / 2.0)
    proj = np.zeros((4, 4), np.float32)
    proj[0, 0] = f / aspect
    proj[1, 1] = f
    proj[2, 2] = (far + near) / (near - far)
    proj[2, 3] = 2.0 * far * near / (near - far)
    proj[3, 2] = -1.0
    return proj


def gl_bytes(matrix: np.ndarray) -> bytes:
    """Column-major bytes as GLSL `mat4` uniforms expect."""
    return np.ascontiguousarray(np.asarray(matrix, np.float32).T).tobytes()


def project_points(points: np.ndarray, view_proj: np.ndarray, width: int, height: int) -> np.ndarray:
    """World points [..., 3] -> window pixels [..., 2] with the origin at the TOP-left (image rows)."""
    homogeneous = np.concatenate([points, np.ones(points.shape[:-1] + (1,))], axis=-1)
    clip = homogeneous @ np.asarray(view_proj, np.float64).T
    ndc = clip[..., :2] / clip[..., 3:4]
    return np.stack([(ndc[..., 0] + 1) * 0.5 * width, (1 - ndc[..., 1]) * 0.5 * height], axis=-1)


@dataclass
class OrbitCamera:
    """Orbit camera around a damped follow target. Yaw 0 looks down -Z (camera on the +Z side)."""

    yaw: float = 0.6
    pitch: float = 0.32
    distance: float = 4.5
    fov_y: float = np.radians(45.0)
    follow_halflife: float = 0.25
    target_height: float = 0.9
    target: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.9, 0.0]))
    min_distance: float = 1.0
    max_distance: float = 40.0
    lens_shift: float = 0.0  # horizontal image shift in NDC units (centres the view beside the panel)

    def follow(self, point: np.ndarray, dt: float) -> None:
        """Move the target toward `point` (a ground position) with halflife damping."""
        goal = np.array([point[0], self.target_height, point[2]], np.float64)
        self.target = self.target + (goal - self.target) * damp_factor(self.follow_halflife, dt)

    def snap(self, point: np.ndarray) -> None:
        self.target = np.array([point[0], self.target_height, point[2]], np.float64)

    def orbit(self, delta_yaw: float, delta_pitch: float) -> None:
        self.yaw = float((self.yaw + delta_yaw) % (2 * np.pi))
        self.pitch = float(np.clip(self.pitch + delta_pitch, np.radians(-5.0), np.radians(85.0)))

    def zoom(self, steps: float) -> None:
        self.distance = float(np.clip(self.distance * 0.9 ** steps, self.min_distance, self.max_distance))

    def eye(self) -> np.ndarray:
        offset = np.array([np.sin(self.yaw) * np.cos(self.pitch), np.sin(self.pitch),
                           np.cos(self.yaw) * np.cos(self.pitch)])
        return self.target + self.distance * offset

    def view(self) -> np.ndarray:
        return look_at(self.eye(), self.target)

    def projection(self, aspect: float) -> np.ndarray:
        proj = perspective(self.fov_y, aspect, 0.05, 300.0)
        proj[0, 2] = -self.lens_shift  # clip x gains lens_shift * w: the image moves by lens_shift in NDC
        return proj

    def view_yaw(self) -> float:
        """Yaw of the horizontal viewing direction as `pfnn_core.controller` expects it (0 looks along
        +Z); the camera sits on the opposite side of the target, hence the half turn."""
        return float((self.yaw + np.pi) % (2 * np.pi))
