"""The viewer camera (follow, orbit, free fly and fixed modes) and the view/projection matrices it
produces.

Angles in radians, distances in metres. The target point follows the middle of the character's body with
halflife damping (exact for any dt), so the view stays smooth when the frame rate changes; zooming in stops
where the whole body still fits (`app.render.framing`), so a close-up never cuts off the feet or the head.
Matrices are numpy float32 [4, 4] in the usual row-major maths layout; `gl_bytes` transposes them for GLSL.
"""

from dataclasses import dataclass, field

import numpy as np

from app.render.framing import body_extent, body_points, framing_distance

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


CAMERA_MODES = ("follow", "orbit", "free", "fixed")
DEFAULT_YAW, DEFAULT_PITCH, DEFAULT_DISTANCE = 0.6, 0.32, 4.5


def smoothstep(t: float) -> float:
    t = float(np.clip(t, 0.0, 1.0))
    return t * t * (3.0 - 2.0 * t)


def orbit_offset(yaw: float, pitch: float) -> np.ndarray:
    """Unit vector from the look-at point to the eye; yaw 0 puts the eye on the +Z side."""
    return np.array([np.sin(yaw) * np.cos(pitch), np.sin(pitch), np.cos(yaw) * np.cos(pitch)])


@dataclass
class Camera:
    """A camera in one of four modes, with smooth transitions between them:

    - follow (default): orbits a target that follows the character with halflife damping; drag turns it;
    - orbit: the same, turning around the character by itself at `orbit_rate`;
    - free: flies where W A S D / Q E (with the right mouse button held) and the gamepad take it; drag looks;
    - fixed: stays where it was when the mode was chosen and turns to keep the character in view.

    A pan (middle drag, Shift+left drag) slides the view across the screen: an offset from the followed
    point in follow, orbit and fixed, the eye itself in free fly; F (`frame`) and Home clear it.

    Yaw 0 looks down -Z (camera on the +Z side). A mode change blends the eye and the look-at point from
    the old view to the new one over `transition_s` seconds (smoothstep), so the view never jumps.
    """

    yaw: float = DEFAULT_YAW
    pitch: float = DEFAULT_PITCH
    distance: float = DEFAULT_DISTANCE
    fov_y: float = np.radians(45.0)
    follow_halflife: float = 0.25
    target_height: float = 0.9  # the look-at point above the ground: the middle of the body once one is seen
    target: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.9, 0.0]))  # the followed point
    min_distance: float = 1.0
    max_distance: float = 40.0
    lens_shift: float = 0.0  # horizontal image shift in NDC units (centres the view beside the panel)
    aspect: float = 16 / 9  # of the window, as last drawn (framing needs it)
    pan_offset: np.ndarray = field(default_factory=lambda: np.zeros(3))  # look-at point minus the followed one
    body_top: float = 1.8  # m above the ground: the followed body's top (smoothed)
    body_radius: float = 0.5  # m around its root: the body's reach (smoothed)
    body_halflife: float = 0.5  # s: arm swings do not make the view breathe
    ground_reach: float = 0.0  # m around the root that ground overlays cover (the phase ring): kept in view too
    frame_margin: float = 0.15  # share of the half view left around the body when F frames it
    close_margin: float = 0.03  # ... and at the closest zoom
    mode: str = "follow"
    orbit_rate: float = 0.35  # rad/s in orbit mode
    fly_speed: float = 3.0  # m/s in free-fly mode
    transition_s: float = 0.6
    free_eye: np.ndarray = field(default_factory=lambda: np.zeros(3))
    fixed_eye: np.ndarray = field(default_factory=lambda: np.zeros(3))
    transition: float = 1.0  # 0 = just changed mode .. 1 = done
    from_eye: np.ndarray = field(default_factory=lambda: np.zeros(3))
    from_look: np.ndarray = field(default_factory=lambda: np.zeros(3))

    # ---- modes ----------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        if mode not in CAMERA_MODES:
            raise ValueError(f"camera mode must be one of {CAMERA_MODES}, got {mode!r}")
        if mode == self.mode:
            return
        self._begin_transition()
        eye = self.eye()
        if mode == "free":
            self.free_eye = eye.copy()
            self.yaw, self.pitch = self._angles_toward(eye, self.look_point())
        elif mode == "fixed":
            self.fixed_eye = eye.copy()
        elif self.mode in ("free", "fixed"):  # back to orbiting the target from where the camera is
            self.pan_offset = np.zeros(3)
            self.yaw, self.pitch = self._angles_toward(eye, self.target)
            self.distance = float(np.clip(np.linalg.norm(eye - self.target), self.min_distance, self.max_distance))
        self.mode = mode

    def next_mode(self) -> None:
        self.set_mode(CAMERA_MODES[(CAMERA_MODES.index(self.mode) + 1) % len(CAMERA_MODES)])

    def reset(self) -> None:
        """Back to the default follow view (smoothly)."""
        self._begin_transition()
        self.mode = "follow"
        self.yaw, self.pitch, self.distance = DEFAULT_YAW, DEFAULT_PITCH, DEFAULT_DISTANCE
        self.pan_offset = np.zeros(3)

    def frame(self) -> None:
        """Frame the character (F, as in Unity and Blender): the whole body in view, filling it but for
        `frame_margin`, from where the camera looks now (free fly and fixed go back to following it;
        a pan is cleared), smoothly."""
        if self.mode in ("free", "fixed"):
            self.set_mode("follow")
        else:
            self._begin_transition()
        self.pan_offset = np.zeros(3)
        self.distance = float(np.clip(self.framing_distance(self.frame_margin), self.min_distance, self.max_distance))

    def framing_distance(self, margin: float) -> float:
        """How far from the followed point the body fits the view beside the panel, from this direction."""
        points = body_points(self.target, self.body_top, self.body_radius, self.ground_reach)
        return framing_distance(points, self.target, orbit_offset(self.yaw, self.pitch), self.fov_y, self.aspect,
                                1.0 - abs(self.lens_shift), margin)

    def closest_distance(self) -> float:
        """The closest the follow and orbit views zoom: the whole body still in view."""
        return max(self.min_distance, self.framing_distance(self.close_margin))

    def _begin_transition(self) -> None:
        self.from_eye, self.from_look = self.eye().copy(), self.look_point().copy()
        self.transition = 0.0

    @staticmethod
    def _angles_toward(eye: np.ndarray, look: np.ndarray) -> tuple[float, float]:
        """(yaw, pitch) whose orbit offset points from `look` back to `eye`."""
        offset = eye - look
        length = max(float(np.linalg.norm(offset)), 1e-9)
        return float(np.arctan2(offset[0], offset[2]) % (2 * np.pi)), float(np.arcsin(np.clip(offset[1] / length, -1, 1)))

    # ---- per frame ------------------------------------------------------------------------------
    def follow(self, point: np.ndarray, dt: float, body: np.ndarray | None = None) -> None:
        """Per frame: move the target toward `point` (a ground position) with halflife damping, turn in
        orbit mode, advance a mode transition. `body` (the followed body's joints, world: `framing.body_joints`) sets the
        height of the target (the body's middle) and the closest zoom."""
        if body is not None:
            self._watch_body(body, point, damp_factor(self.body_halflife, dt))
        goal = np.array([point[0], self.target_height, point[2]], np.float64)
        self.target = self.target + (goal - self.target) * damp_factor(self.follow_halflife, dt)
        if self.mode == "orbit":
            self.yaw = float((self.yaw + self.orbit_rate * dt) % (2 * np.pi))
        if self.transition < 1.0:
            self.transition = min(1.0, self.transition + dt / max(self.transition_s, 1e-6))
        if self.mode in ("follow", "orbit"):
            self.distance = max(self.distance, self.closest_distance())

    def _watch_body(self, body: np.ndarray, point: np.ndarray, amount: float) -> None:
        top, radius = body_extent(body, point)
        self.body_top += (top - self.body_top) * amount
        self.body_radius += (radius - self.body_radius) * amount
        self.target_height = self.body_top / 2.0

    def snap(self, point: np.ndarray, body: np.ndarray | None = None) -> None:
        if body is not None:
            self._watch_body(body, point, 1.0)
        self.target = np.array([point[0], self.target_height, point[2]], np.float64)
        self.transition = 1.0

    def orbit(self, delta_yaw: float, delta_pitch: float) -> None:
        """Turn around the target (free fly: look around; fixed: nothing to turn)."""
        if self.mode == "fixed":
            return
        low = np.radians(-85.0 if self.mode == "free" else -5.0)
        self.yaw = float((self.yaw + delta_yaw) % (2 * np.pi))
        self.pitch = float(np.clip(self.pitch + delta_pitch, low, np.radians(85.0)))

    def zoom(self, steps: float) -> None:
        if self.mode == "free":
            self.free_eye = self.free_eye - orbit_offset(self.yaw, self.pitch) * 0.5 * steps
        elif self.mode == "fixed":
            toward = self.target - self.fixed_eye
            room = float(np.linalg.norm(toward)) - self.min_distance
            self.fixed_eye = self.fixed_eye + toward / max(np.linalg.norm(toward), 1e-9) * min(0.5 * steps, room)
        else:
            self.distance = float(np.clip(self.distance * 0.9 ** steps, self.closest_distance(), self.max_distance))

    def pan(self, dx: float, dy: float, view_height: float) -> None:
        """Slide the view by a drag of (dx, dy) pixels (y up) in a view `view_height` pixels tall: what lies
        at the look-at point's depth moves with the mouse."""
        eye, look = self.eye(), self.look_point()
        view = look_at(eye, look)
        right, up = view[0, :3].astype(np.float64), view[1, :3].astype(np.float64)
        metres_per_pixel = 2.0 * np.tan(self.fov_y / 2.0) * float(np.linalg.norm(look - eye)) / max(view_height, 1.0)
        shift = -(right * dx + up * dy) * metres_per_pixel
        if self.mode == "free":
            self.free_eye = self.free_eye + shift
            return
        if self.mode == "fixed":
            self.fixed_eye = self.fixed_eye + shift
        self.pan_offset = self.pan_offset + shift
        if self.transition < 1.0:  # a pan during a transition moves its start too, so nothing lags behind
            self.from_eye, self.from_look = self.from_eye + shift, self.from_look + shift

    def fly(self, move: np.ndarray, up: float, dt: float) -> None:
        """Free fly: `move` is a stick (x right, y forward) in the view's frame, `up` -1..1."""
        forward = -orbit_offset(self.yaw, self.pitch)
        right = np.cross(forward, [0.0, 1.0, 0.0])
        right /= max(np.linalg.norm(right), 1e-9)
        velocity = right * move[0] + forward * move[1] + np.array([0.0, 1.0, 0.0]) * up
        self.free_eye = self.free_eye + velocity * self.fly_speed * dt

    # ---- what the renderer reads ----------------------------------------------------------------
    def _mode_eye(self) -> np.ndarray:
        if self.mode == "free":
            return self.free_eye
        if self.mode == "fixed":
            return self.fixed_eye
        return self.target + self.pan_offset + self.distance * orbit_offset(self.yaw, self.pitch)

    def _mode_look(self) -> np.ndarray:
        if self.mode == "free":
            return self.free_eye - orbit_offset(self.yaw, self.pitch)
        return self.target + self.pan_offset

    def eye(self) -> np.ndarray:
        if self.transition >= 1.0:
            return self._mode_eye()
        return self.from_eye + (self._mode_eye() - self.from_eye) * smoothstep(self.transition)

    def look_point(self) -> np.ndarray:
        if self.transition >= 1.0:
            return self._mode_look()
        return self.from_look + (self._mode_look() - self.from_look) * smoothstep(self.transition)

    def view(self) -> np.ndarray:
        return look_at(self.eye(), self.look_point())

    def projection(self, aspect: float) -> np.ndarray:
        proj = perspective(self.fov_y, aspect, 0.05, 300.0)
        proj[0, 2] = -self.lens_shift  # clip x gains lens_shift * w: the image moves by lens_shift in NDC
        return proj

    def view_yaw(self) -> float:
        """Yaw of the horizontal viewing direction as `pfnn_core.controller` expects it (0 looks along
        +Z), so the stick moves the character relative to what the screen shows in every mode."""
        looking = self.look_point() - self.eye()
        if np.hypot(looking[0], looking[2]) < 1e-6:  # looking straight down: fall back on the yaw
            return float((self.yaw + np.pi) % (2 * np.pi))
        return float(np.arctan2(looking[0], looking[2]) % (2 * np.pi))


OrbitCamera = Camera  # the earlier name, still used by the renderer's type hints
