"""Motion matching at run time: inertialized transitions (continuous at the switch, the destination after
a few half-lives), the runtime driving it (walks, stops on standing frames, strafes), crowds batched."""
import numpy as np
import pytest
from test_matching_build import CLIPS, angle_between, linked_folder

from pfnn_core.math.quat import quat_from_6d, quat_from_angle_axis, quat_normalize
from pfnn_core.models.matching.build import build_matching
from pfnn_core.models.matching.inertialize import play_kernel
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.runtime.character import Character
from pfnn_core.runtime.command import command_from_world_move

DT = 1.0 / 60.0
HALFLIFE = 0.1
# a three-joint chain: root (the hips) -> knee -> foot
PARENTS, BONES = np.array([-1, 0, 1]), np.array([[0.0, 0.0, 0.0], [0.0, -0.45, 0.0], [0.0, -0.45, 0.05]])
Y_STARTS = np.array([0, 2, 3, 4, 8, 20, 32, 41, 50])  # output blocks for 3 joints (`output_starts`)


@pytest.fixture(scope="module")
def database_path(tmp_path_factory):
    folder = linked_folder(tmp_path_factory.mktemp("clips"), CLIPS)
    out = folder.parent / "mm.safetensors"
    build_matching(folder, out, say=lambda message: None)
    return out


class Player:
    """The kernel over a batch of one, with its offsets, fed rows made up per tick."""

    def __init__(self):
        self.state = {name: np.zeros(shape) for name, shape in (
            ("rot_off", (1, 3, 3)), ("rot_vel", (1, 3, 3)), ("hips_off", (1, 3)), ("hips_vel", (1, 3)),
            ("root_off", (1, 3)), ("root_vel", (1, 3)), ("last_pos", (1, 3, 3)), ("last_root", (1, 3)))}
        self.has_last = np.zeros(1, bool)

    def tick(self, current, found, switch=False, frac=0.0):
        """current / found: (rotations [2, 3, 4], hips [2, 3]) of a row and its next."""
        rotations = np.concatenate([current[0], found[0]])[None]
        hips = np.concatenate([current[1], found[1]])[None]
        y, pos, root = np.zeros((1, 68)), np.zeros((1, 3, 3)), np.zeros((1, 3))
        s = self.state
        play_kernel(rotations, hips, np.zeros((1, 4, 3)), np.zeros((1, 4, 4)), np.zeros((1, 4)), np.array([frac]),
                    np.array([switch]), 2 * DT, 2.0, HALFLIFE, DT, s["rot_off"], s["rot_vel"], s["hips_off"],
                    s["hips_vel"], s["root_off"], s["root_vel"], s["last_pos"], s["last_root"], self.has_last,
                    PARENTS, BONES, 0, np.array([1, 2]), np.zeros(0, np.int64), Y_STARTS, y, pos, root)
        s["last_pos"], self.has_last = pos, np.ones(1, bool)
        rot6 = y[0, 50:68].reshape(3, 6)
        return pos[0], rot6


def still_row(rng):
    rotations = quat_normalize(rng.normal(size=(3, 4)))
    return np.stack([rotations, rotations]), np.tile(rng.normal(0, 0.1, 3) + [0, 0.9, 0], (2, 1))


def remaining_share(ticks: float) -> float:
    """What is left of an offset from rest after `ticks` ticks: (1 + u t) exp(-u t), u t = 1.678 at one
    half-life (the critically damped spring of `runtime.trajectory.spring_rate`)."""
    ut = 1.6783469900166612 * ticks * DT / HALFLIFE
    return (1.0 + ut) * np.exp(-ut)


def test_a_switch_is_continuous_and_ends_on_the_destination_after_a_few_half_lives():
    rng = np.random.default_rng(0)
    source, destination = still_row(rng), still_row(rng)
    player = Player()
    _, rot6 = player.tick(source, source)
    source_rot = quat_from_6d(rot6)
    destination_rot = quat_from_6d(Player().tick(destination, destination)[1])
    gap = angle_between(source_rot, destination_rot)
    assert gap.min() > 10.0
    shares = []
    for tick in range(60):
        _, rot6 = player.tick(source, destination, switch=True) if tick == 0 else player.tick(destination, destination)
        shares.append(angle_between(quat_from_6d(rot6), destination_rot) / gap)
    shares = np.array(shares)  # [tick, joint]: of each joint's jump, what is still shown
    expected = remaining_share(np.arange(0, 60))
    np.testing.assert_allclose(shares, np.repeat(expected[:, None], 3, axis=1), atol=2e-6)
    assert shares[0] == pytest.approx(1.0, abs=2e-6)  # the switch tick shows the source exactly
    assert shares[int(round(HALFLIFE / DT))] == pytest.approx(0.5, abs=1e-6)
    assert shares[5 * int(round(HALFLIFE / DT))].max() < 0.003


def test_the_hips_offset_decays_by_half_in_one_half_life_exactly():
    player = Player()
    source = (np.tile([1.0, 0, 0, 0], (2, 3, 1)), np.tile([0.0, 1.0, 0.0], (2, 1)))
    destination = (source[0], np.tile([0.2, 1.0, 0.0], (2, 1)))
    player.tick(source, source)
    player.tick(source, destination, switch=True)
    for _ in range(int(round(HALFLIFE / DT))):
        hips, _ = player.tick(destination, destination)
    assert hips[0, 0] == pytest.approx(0.1, abs=1e-9)  # half of the 0.2 m jump is left after 0.1 s


def test_velocities_carry_through_a_switch():
    """A source turning one way and a destination turning the other: the shown joint keeps the source's
    turning speed across the switch instead of jumping to the destination's."""
    axis = np.array([0.0, 0.0, 1.0])
    rows = lambda angle, rate: (np.stack([np.tile(quat_from_angle_axis(angle + rate * k * 2 * DT, axis), (3, 1))
                                          for k in (0, 1)]), np.tile([0.0, 1.0, 0.0], (2, 1)))
    player = Player()
    angles = []
    for k in range(4):  # turning at +2 rad/s, each tick's row at the angle reached
        _, rot6 = player.tick(rows(2.0 * k * DT, 2.0), rows(2.0 * k * DT, 2.0))
        angles.append(np.arctan2(rot6[0, 1], rot6[0, 0]))
    _, rot6 = player.tick(rows(8.0 * DT, 2.0), rows(0.5, -2.0), switch=True)  # to a frame turning at -2 rad/s
    angles.append(np.arctan2(rot6[0, 1], rot6[0, 0]))
    for k in range(1, 3):
        _, rot6 = player.tick(rows(0.5 - 2.0 * k * DT, -2.0), rows(0.5 - 2.0 * k * DT, -2.0))
        angles.append(np.arctan2(rot6[0, 1], rot6[0, 0]))
    rates = np.diff(angles) / DT
    assert rates[:3] == pytest.approx(2.0, abs=1e-6)
    assert rates[3] > 1.5 and rates[4] > 0.5  # still turning the source's way; -2 rad/s without the velocity offset


def test_the_runtime_walks_stops_on_standing_frames_and_keeps_its_feet(database_path):
    character = Character(load_checkpoint(database_path))
    model = character.model
    walk = command_from_world_move(np.array([0.0, 1.0]), False, character.settings)
    stand = command_from_world_move(np.array([0.0, 0.0]), False, character.settings)
    states = [character.tick(walk, DT) for _ in range(240)] + [character.tick(stand, DT) for _ in range(150)]
    assert not character.faults
    root = np.array([s.root_pos[0] for s in states])
    speed = np.linalg.norm(np.diff(root[120:240, [0, 2]], axis=0), axis=-1).mean() / DT
    assert 0.8 * character.settings.walk_speed < speed < 1.2 * character.settings.walk_speed
    assert abs(root[239, 0]) < 0.3  # straight ahead
    playing = model.now_playing(states[-1].model_state)
    assert playing["standing"] and "raise-up" in playing["clip"]
    switches = states[239].model_state["switches"][0] - states[60].model_state["switches"][0]
    assert 0 < switches <= 3 * 30  # at most one switch per search every 0.1 s, and some
    still = np.array([s.world_joint_pos[0] for s in states[-30:]])
    assert np.abs(still[-1] - still[0]).max() < 0.01  # standing: nothing moves


def test_a_crowd_searches_in_one_batch_what_each_character_finds_alone(database_path):
    checkpoint = load_checkpoint(database_path)
    styles = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]])
    moves = np.array([[0.0, 1.0], [0.7, 0.7], [-1.0, 0.0]])
    crowd = Character(checkpoint, batch=3, positions=np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.0]]), settle_ticks=5)
    crowd.state = type(crowd.state)(**{**crowd.state.__dict__, "style": styles.copy()})
    alone = []
    for k in range(3):
        one = Character(checkpoint, positions=np.array([[2.0 * k, 0.0]]), settle_ticks=5)
        one.state = type(one.state)(**{**one.state.__dict__, "style": styles[k:k + 1].copy()})
        alone.append(one)
    for _ in range(100):
        commands = [command_from_world_move(m, False, crowd.settings) for m in moves]
        together = crowd.tick(commands, DT)
        each = [one.tick(commands[k], DT) for k, one in enumerate(alone)]
    for k in range(3):
        np.testing.assert_allclose(together.world_joint_pos[k], each[k].world_joint_pos[0], atol=1e-9)
        assert together.model_state["row"][k] == each[k].model_state["row"][0]
    assert len(set(together.model_state["row"].tolist())) == 3


def test_a_sharp_turn_searches_at_once(database_path):
    character = Character(load_checkpoint(database_path))
    character.settings.matching_search_interval = 1.0
    ahead = command_from_world_move(np.array([0.0, 1.0]), False, character.settings)
    back = command_from_world_move(np.array([0.0, -1.0]), False, character.settings)
    for _ in range(150):
        state = character.tick(ahead, DT)
    before = state.model_state["switches"][0]
    for _ in range(12):
        state = character.tick(back, DT)
    assert state.model_state["switches"][0] > before  # within 0.2 s although a search is due only every second
    assert state.model_state["clock"][0] < 0.2


def test_the_state_moves_with_the_character(database_path):
    """Only root-frame quantities: a character placed elsewhere plays the same frames and shows the same
    pose relative to its root."""
    checkpoint = load_checkpoint(database_path)
    here = Character(checkpoint, settle_ticks=5)
    there = Character(checkpoint, positions=np.array([[3.0, -2.0]]), yaws=np.array([1.2]), settle_ticks=5)
    for _ in range(80):
        a = here.tick(command_from_world_move(np.array([0.0, 1.0]), False, here.settings), DT)
        turned = np.array([np.sin(1.2), np.cos(1.2)])
        b = there.tick(command_from_world_move(turned, False, there.settings), DT)
    assert a.model_state["row"][0] == b.model_state["row"][0]
    np.testing.assert_allclose(a.joint_pos, b.joint_pos, atol=1e-6)


def test_a_switch_between_moving_frames_follows_the_analytic_spring_in_position_and_velocity():
    """Hips moving at 1.5 m/s switched to a frame 0.3 m away moving at -0.5 m/s: the shown hips are the
    destination plus the offset x(t) = (x0 + (v0 + u x0) t) exp(-u t) (x0 the position gap, v0 the
    velocity gap, u the half-life's rate), so position and velocity carry on across the switch."""
    rate = 1.6783469900166612 / HALFLIFE
    still = np.tile([1.0, 0, 0, 0], (2, 3, 1))

    def rows(start, velocity, t):  # a row at time t and the next one, 2 ticks later
        return still, np.array([[start + velocity * t, 1.0, 0.0], [start + velocity * (t + 2 * DT), 1.0, 0.0]])

    player = Player()
    shown = [player.tick(rows(0.0, 1.5, k * DT), rows(0.0, 1.5, k * DT))[0][0, 0] for k in range(4)]
    source_now = 1.5 * 4 * DT
    x0, v0 = source_now - 0.3, 1.5 - (-0.5)
    for k in range(30):
        current = rows(0.0, 1.5, 4 * DT) if k == 0 else rows(0.3, -0.5, k * DT)
        shown.append(player.tick(current, rows(0.3, -0.5, k * DT), switch=k == 0)[0][0, 0])
        t = k * DT  # the offset decays from the switch tick on, as the destination plays
        offset = (x0 + (v0 + rate * x0) * t) * np.exp(-rate * t)
        assert shown[-1] == pytest.approx(0.3 - 0.5 * k * DT + offset, abs=1e-9)
    velocity = np.diff(shown) / DT
    assert velocity[:3] == pytest.approx(1.5, abs=1e-9)
    # across the switch the velocity changes by no more than the spring's acceleration allows in a tick
    assert velocity[3] == pytest.approx(1.5, abs=1e-9)  # the switch tick: the source's own step
    acceleration = abs(-rate * rate * x0 - 2.0 * rate * v0)  # the spring's at the switch
    assert abs(velocity[4] - 1.5) < acceleration * DT  # then the velocity bends at the spring's rate
