"""Per-file contact and phase summary and plots for the data inspector (`pfnn-data inspect --plots`)."""

from __future__ import annotations

import numpy as np

from pfnn_core import files
from pfnn_core.features.contract import CONTACT_NAMES, SIM_FPS
from pfnn_core.motion.gait_labels import gait_labels_at_sim_rate
from pfnn_core.motion.phase import cycle_lengths, touchdowns


def contact_phase_summary(motion) -> dict:
    """Contacts and phase of one clip, measured at the simulation rate (60 Hz), as plain numbers."""
    labels, fps = gait_labels_at_sim_rate(motion), SIM_FPS
    contacts = labels.contacts
    left, right = contacts[:, 0] | contacts[:, 1], contacts[:, 2] | contacts[:, 3]
    cycles = cycle_lengths(labels.phase) if labels.phase_method != "none" else np.zeros(0)
    summary = {
        "label_fps": fps,
        "frames": int(len(labels.phase)),
        "phase_method": labels.phase_method,
        "contact_share": {name: float(contacts[:, k].mean()) for k, name in enumerate(CONTACT_NAMES)},
        "toe_contact_share": float(contacts[:, [1, 3]].mean()),
        "foot_contact_share": float(contacts[:, [0, 2]].mean()),
        "touchdowns_right": int(len(touchdowns(right))),
        "touchdowns_left": int(len(touchdowns(left))),
        "standing_share": float(labels.standing.mean()),
        "mean_speed": float(labels.root_speed.mean()),
        "cycles": int(len(cycles)),
        "cycle_frames_median": float(np.median(cycles)) if len(cycles) else None,
        "cycle_frames_p10": float(np.percentile(cycles, 10)) if len(cycles) else None,
        "cycle_frames_p90": float(np.percentile(cycles, 90)) if len(cycles) else None,
    }
    return summary


def save_contact_phase_plots(motion, out_png_prefix) -> list[str]:
    """Write `<prefix>_contacts_phase.png`: foot heights with contact bands, phase over time, phase
    histogram. Returns the written paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, fps = gait_labels_at_sim_rate(motion), SIM_FPS
    time = np.arange(len(labels.phase)) / fps
    heights = labels.global_positions[:, labels.contact_joints, 1]
    figure, axes = plt.subplots(3, 1, figsize=(10, 8), gridspec_kw={"height_ratios": [2, 1, 1]})
    colours = ["tab:blue", "tab:cyan", "tab:red", "tab:orange"]
    for k, name in enumerate(CONTACT_NAMES):
        axes[0].plot(time, heights[:, k], color=colours[k], label=name)
        axes[0].fill_between(time, 0, heights.max(), where=labels.contacts[:, k], color=colours[k], alpha=0.12, step="mid")
    axes[0].set_ylabel("height (m)")
    axes[0].legend(loc="upper right", fontsize=8)
    axes[0].set_title(f"{getattr(motion, 'source', '') or 'clip'}: foot heights, contact bands")
    axes[1].plot(time, labels.phase, color="k", lw=1)
    axes[1].set_ylabel(f"phase ({labels.phase_method})")
    axes[1].set_xlabel("time (s)")
    axes[2].hist(labels.phase, bins=20, range=(0, 1), color="tab:gray")
    axes[2].set_xlabel("phase")
    axes[2].set_ylabel("frames")
    figure.tight_layout()
    path = f"{out_png_prefix}_contacts_phase.png"
    files.write_figure(path, figure, dpi=80)
    plt.close(figure)
    return [path]
