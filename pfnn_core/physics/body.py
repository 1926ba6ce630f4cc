"""`PhysicsBody`: the compiled MuJoCo model of one skeleton, the indices the tracker needs, and
`apply(settings)`, which writes the live settings into the model (servo gains, the root's hold, friction,
masses, time step). `PhysicsBody.build(skeleton, fit, floor_heights)` makes one; the MJCF text is kept
in the cache folder under the plan's hash (`save` writes it anywhere for inspection).

The servos: each ball joint is a spring toward its target rotation (MuJoCo's joint stiffness with the
target as the spring's rest rotation `qpos_spring`, which MuJoCo measures along the shortest arc, so
the torque is the gradient of the angle to the target however far the joint has turned) and a damper
(joint damping, which MuJoCo integrates implicitly: explicit damping went unstable in a trial here).
The gains follow the inertia each joint moves: kp = (2 pi f)^2 I, kv = 2 zeta (2 pi f) I.
"""
from __future__ import annotations

import logging
from pathlib import Path

import mujoco
import numpy as np

from pfnn_core.math.quat import quat_to_matrix
from pfnn_core.physics import mjcf
from pfnn_core.physics.fit import BodyFit, cache_folder
from pfnn_core.physics.geometry import BodyPlan, body_plan
from pfnn_core.physics.settings import PhysicsSettings
from pfnn_core.runtime.ik import leg_chains

log = logging.getLogger(__name__)

LEG_KEYWORDS = ("leg", "thigh", "shin", "calf", "knee", "foot", "ankle")  # joints whose servos carry the body
# An ankle or a toe carries the body's weight at the far end of its sole (a heel strike, a push-off over
# the toes): its spring is at least stiff enough to give only this much under it.
FOOT_GIVE = 0.05  # rad
SOLE_SOLMIX = 1e6  # the soles' weight against the floor's (1) when MuJoCo mixes their contact parameters


class PhysicsBody:
    """The compiled model plus where each joint lives in it; one model serves any number of characters
    (each has its own `mujoco.MjData`; the servo targets live in the model and are set per character)."""

    def __init__(self, plan: BodyPlan, xml: str):
        self.plan, self.xml = plan, xml
        self.model = mujoco.MjModel.from_xml_string(xml)
        model = self.model
        self.body_ids = np.array([model.body(plan.names[j]).id for j in plan.joints])
        self.joints = np.array(plan.joints)  # simulated joints, parents first (the hips first)
        self.ball_joints = self.joints[1:]
        joint_ids = np.array([model.joint(plan.names[j]).id for j in self.ball_joints])
        self.joint_ids = joint_ids
        self.qpos_address = model.jnt_qposadr[joint_ids]
        self.dof_address = model.jnt_dofadr[joint_ids]
        self.spring_index = (self.qpos_address[:, None] + np.arange(4)).ravel()  # into qpos / qpos_spring
        self.dof_index = (self.dof_address[:, None] + np.arange(3)).ravel()  # into qvel / qfrc
        # the ball joints in MuJoCo's order: their qpos and dofs are one block each (after the free joint's)
        self.address_order = np.argsort(self.qpos_address)
        first_qpos, first_dof = int(self.qpos_address.min()), int(self.dof_address.min())
        self.spring_slice = slice(first_qpos, first_qpos + 4 * len(joint_ids))
        self.dof_slice = slice(first_dof, first_dof + 3 * len(joint_ids))
        if not (np.array_equal(np.sort(self.spring_index), np.arange(self.spring_slice.start, self.spring_slice.stop)) and
                np.array_equal(np.sort(self.dof_index), np.arange(self.dof_slice.start, self.dof_slice.stop))):
            raise ValueError("the ball joints' coordinates are not one block in the compiled model")
        self.chest_body = model.body(plan.names[plan.chest]).id
        self.root_body = model.body(plan.names[plan.root]).id
        self.floor = model.geom(mjcf.FLOOR).id
        self.sole_geoms = {j: [model.geom(f"{plan.names[j]}:box{i}").id for i, s in enumerate(plan.node(j).shapes)
                               if s.kind == "box"] for j in plan.contact_joints}
        self.base_mass = model.body_mass.copy()
        self.base_inertia = model.body_inertia.copy()
        self.base_contype, self.base_conaffinity = model.geom_contype.copy(), model.geom_conaffinity.copy()
        sole = [(g, slot) for slot, j in enumerate(plan.contact_joints) for g in self.sole_geoms[j]]
        self.sole_index, self.sole_owner = np.array([g for g, _ in sole]), np.array([slot for _, slot in sole])
        self.sole_slot = {int(g): slot for g, slot in sole}
        # a sole's contact with the floor takes the sole's own solref (`PhysicsSettings.sole_contact_time`):
        # MuJoCo mixes the two geoms' by their solmix weights
        model.geom_solmix[self.sole_index] = SOLE_SOLMIX
        # the sole boxes' contact sensors (`mjcf._sole_sensors`): where each one's 3 numbers are in
        # `sensordata` (one block, the boxes in `sole_index`'s order) and the matrix summing them per joint
        boxes = list(self.sole_slot)  # each box once, its force on the joint `sole_slot` gives (as `sole_forces`)
        sensors = [model.sensor(f"floor>{model.geom(g).name}") for g in boxes]
        first = int(model.sensor_adr[sensors[0].id])
        self.sole_sensors = slice(first, first + 3 * len(sensors))
        if [int(model.sensor_adr[s.id]) for s in sensors] != list(range(first, self.sole_sensors.stop, 3)):
            raise ValueError("the soles' contact sensors are not one block in the compiled model")
        self.sole_sum = (np.array([self.sole_slot[g] for g in boxes])[None, :] == np.arange(4)[:, None]).astype(float)
        self.root_dofs = model.jnt_dofadr[model.body_jntadr[self.root_body]] + np.arange(6)  # x, y, z (world), 3 turns (local)
        ball = {int(j): n for n, j in enumerate(self.ball_joints)}
        # per leg (left, right: the feet of contact slots 0-1 and 2-3), its servos: hip, knee, ankle and toe
        self.leg_servos = [sorted({ball[j] for j in chain if j in ball}) for chain in leg_chains(plan.names, plan.parents)]
        self.is_leg = np.array([any(k in plan.names[j].lower() for k in LEG_KEYWORDS) for j in self.ball_joints])
        self.axis_inertia, self.root_inertia = self._axis_inertia()
        self.sole_reach = self._sole_reach()
        self.kp = self.kv = np.zeros(len(self.ball_joints))
        self.root_kp = self.root_kv = np.zeros(6)
        self.applied: tuple | None = None
        self._scratch = mujoco.MjData(model)

    @classmethod
    def build(cls, skeleton: dict, fit: BodyFit, floor_heights, use_cache: bool = True) -> "PhysicsBody":
        plan = body_plan(skeleton, fit, floor_heights)
        path = cache_folder() / f"body-{mjcf.plan_digest(plan)}.xml"
        xml = None
        if use_cache and path.is_file():
            xml = path.read_text(encoding="utf-8")
        if xml is None:
            xml = mjcf.mjcf_text(plan)
            if use_cache:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(xml, encoding="utf-8")
                except OSError as error:
                    log.warning("%s: cannot keep the body's MJCF (%s)", path, error)
        return cls(plan, xml)

    def save(self, path) -> Path:
        """Write the MJCF text (it loads in MuJoCo's own viewer: `python -m mujoco.viewer --mjcf PATH`)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.xml, encoding="utf-8")
        return path

    def _axis_inertia(self) -> tuple[np.ndarray, float]:
        """([N, 3], I) kg m^2 in the reference pose: the inertia each ball-joint axis moves (the joint-space
        mass matrix's diagonal, armature left out), and the whole body's about the hips (the mean over
        the root's rotation axes)."""
        model, data = self.model, mujoco.MjData(self.model)
        mujoco.mj_forward(model, data)
        full = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, full)
        diagonal = np.diag(full) - model.dof_armature
        return diagonal[self.dof_index].reshape(-1, 3), float(diagonal[self.root_dofs[3:6]].mean())

    def _sole_reach(self) -> np.ndarray:
        """[N] m: how far each ball joint's soles reach from it (0 for joints without a sole)."""
        reach = np.zeros(len(self.ball_joints))
        for n, joint in enumerate(self.ball_joints):
            for shape in self.plan.node(int(joint)).shapes:
                if shape.sole:
                    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * shape.half_size
                    local = shape.start + corners @ quat_to_matrix(shape.quat).T
                    reach[n] = max(reach[n], float(np.linalg.norm(local[:, [0, 2]], axis=-1).max()))
        return reach

    @property
    def mass(self) -> float:
        return float(self.model.body_mass.sum())

    def bone_lengths(self) -> dict:
        """{joint: distance from its parent's body origin} in the compiled model (the skeleton's bone lengths)."""
        return {int(j): float(np.linalg.norm(self.model.body_pos[b])) for j, b in zip(self.joints[1:], self.body_ids[1:])}

    def apply(self, settings: PhysicsSettings, tick_dt: float) -> None:
        """Write `settings` (clamped by the caller) into the model; cheap when nothing changed."""
        key = settings.values() + (tick_dt,)
        if key == self.applied:
            return
        model = self.model
        model.opt.timestep = tick_dt / settings.substeps
        scale = settings.body_mass / float(self.base_mass.sum())
        model.body_mass[:] = self.base_mass * scale
        model.body_inertia[:] = self.base_inertia * scale
        self._apply_servos(settings, scale)
        model.geom_friction[:, 0] = settings.friction
        model.geom_solref[self.sole_index, 0] = settings.sole_contact_time
        if settings.self_collision:
            model.geom_contype[:], model.geom_conaffinity[:] = self.base_contype, self.base_conaffinity
        else:  # the body's geoms collide with the floor alone
            model.geom_contype[:] = 1
            model.geom_conaffinity[:] = 0
            model.geom_conaffinity[self.floor] = 1
        # the constants MuJoCo derives from masses and armature at compile time (subtree masses, the
        # constraints' inverse weights), at the reference pose
        mujoco.mj_setConst(model, self._scratch)
        self.applied = key

    def _apply_servos(self, settings: PhysicsSettings, scale: float) -> None:
        """Spring and damper gains per ball joint, sized by its stiffest axis's inertia.

        A joint spring is explicit: stable while sqrt(kp / I) dt < 2 for the inertia it moves; an axis
        that moves much less than the joint's stiffest (a forearm's twist) gets armature (rotor inertia)
        up to kp dt^2, keeping sqrt(kp / I) dt <= 1."""
        model = self.model
        omega = 2.0 * np.pi * settings.servo_frequency
        inertia = scale * self.axis_inertia.max(axis=1) * np.where(self.is_leg, settings.leg_stiffness, 1.0)
        weight_bearing = settings.body_mass * 9.81 * self.sole_reach / FOOT_GIVE / (omega * omega)  # as an inertia
        inertia = np.maximum(inertia, weight_bearing)
        self.kp = omega * omega * inertia
        self.kv = 2.0 * settings.damping_ratio * omega * inertia
        model.jnt_stiffness[self.joint_ids] = self.kp
        step = model.opt.timestep
        armature = np.maximum(mjcf.ARMATURE, self.kp[:, None] * step * step - self.axis_inertia * scale)
        model.dof_armature[self.dof_index] = armature.ravel()
        model.dof_damping[self.dof_index] = np.repeat(self.kv, 3)
        # the hold on the hips: the whole body's mass and its inertia about the hips, critically damped
        omega, height = 2.0 * np.pi * settings.root_frequency, 2.0 * np.pi * settings.root_height_frequency
        omega = np.array([omega, height, omega, omega, omega, omega])
        mass = float(model.body_mass.sum())
        carried = np.array([mass] * 3 + [self.root_inertia * scale] * 3)
        self.root_kp = settings.root_help * carried * omega * omega
        self.root_kv = np.sqrt(settings.root_help) * 2.0 * carried * omega
        model.dof_damping[self.root_dofs] = self.root_kv
