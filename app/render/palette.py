"""The 3D scene's colours (sRGB 0..1) and its sun, defined once: sky, ground, the capsule view's sides,
the bodies' outfit, the lights and the shadows."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Palette:
    """Colours of the scene (sRGB 0..1) and the sun."""
    horizon: tuple = (0.80, 0.83, 0.87)
    zenith: tuple = (0.42, 0.55, 0.72)
    ground_a: tuple = (0.70, 0.72, 0.75)
    ground_b: tuple = (0.62, 0.64, 0.68)
    left: tuple = (0.33, 0.63, 0.88)
    right: tuple = (0.94, 0.50, 0.40)
    centre: tuple = (0.90, 0.89, 0.86)
    joint_shade: float = 0.62
    light_sky: tuple = (0.42, 0.48, 0.60)  # linear ambient from above
    light_ground: tuple = (0.22, 0.20, 0.18)  # linear ambient from below
    sun: tuple = (1.25, 1.18, 1.06)  # linear
    sun_direction: tuple = (0.60, 0.75, 0.22)  # toward the sun (normalised where used)
    shadow_ground: tuple = (0.56, 0.60, 0.70)  # the ground's colour is multiplied by this in full shadow
    skin: tuple = (0.87, 0.69, 0.57)
    shirts: tuple = ((0.30, 0.52, 0.78), (0.80, 0.36, 0.30), (0.36, 0.62, 0.40), (0.86, 0.70, 0.32),
                     (0.55, 0.42, 0.70), (0.85, 0.85, 0.82), (0.30, 0.60, 0.65), (0.70, 0.45, 0.55))
    trousers: tuple = (0.25, 0.27, 0.33)
    shoes: tuple = (0.16, 0.15, 0.15)
    hair: tuple = (0.30, 0.21, 0.15)
