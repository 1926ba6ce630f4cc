"""The phase-functioned neural network: config, phase functions, layers, model.

Owns: `ModelConfig`, the two phase functions (`rbf_phase_weights` with the cyclic distance,
`cubic_phase_weights`, a cyclic Catmull-Rom spline over 4 control sets), `PhaseFunctionedLinear`,
`PFNN` (the runtime's CPU copy of the same weights is `pfnn_network.FoldedPFNN`).

Style conditioning: a model with `num_styles` S > 0 takes style weights [B, S] (one-hot for one style,
any weights summing to 1 for a blend) appended to the input of EVERY phase-functioned layer, so each
layer, each kernel, has its own per-style offset; a blend of styles blends those offsets. The style is
never normalised and never dropped out.

A phase function maps the phase p in [0, 1) to blend weights over K weight sets. Each layer computes
all K outputs x @ W_k + b_k with one batched matmul and blends the OUTPUTS with those weights; it never
builds a per-sample weight matrix (that costs B x in x out memory and is several times slower).
The phase functions are written once over numpy arrays and torch tensors alike (`_array_module`).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
from torch import nn

PHASE_FUNCTIONS = ("rbf", "cubic")
CUBIC_CONTROL_POINTS = 4


@dataclass
class ModelConfig:
    input_size: int            # width of the network input x (FeatureLayout input size)
    output_size: int           # width of the network output y (FeatureLayout output size)
    hidden_size: int = 512     # units of each hidden layer [PFNN: 512]
    num_layers: int = 3        # phase-functioned weight layers: num_layers - 1 hidden layers + output
    phase_function: str = "rbf"  # 'rbf' (K kernels, cyclic distance) or 'cubic' (Catmull-Rom, 4 sets)
    num_kernels: int = 8       # rbf weight sets K; cubic always uses 4 control sets
    beta: float = 8.0          # rbf bandwidth used in training; the live value is `PFNN.beta`
    dropout: float = 0.3       # drop probability before every layer [PFNN keeps 70% of units]
    num_styles: int = 0        # style weights appended to every layer's input; 0 = no style input

    def __post_init__(self) -> None:
        if self.phase_function not in PHASE_FUNCTIONS:
            raise ValueError(f"phase_function must be one of {PHASE_FUNCTIONS}, got {self.phase_function!r}")
        for name in ("input_size", "output_size", "hidden_size", "num_layers", "num_kernels"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if int(self.num_styles) < 0:
            raise ValueError(f"num_styles must be >= 0, got {self.num_styles}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    @property
    def kernel_count(self) -> int:
        """Number of weight sets each layer holds."""
        return CUBIC_CONTROL_POINTS if self.phase_function == "cubic" else self.num_kernels

    def layer_sizes(self) -> list[tuple[int, int]]:
        """(inputs, outputs) of each layer; inputs include the style weights."""
        widths = [self.input_size] + [self.hidden_size] * (self.num_layers - 1) + [self.output_size]
        return [(n_in + self.num_styles, n_out) for n_in, n_out in zip(widths[:-1], widths[1:])]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown model config keys: {unknown}")
        return cls(**values)


# --- phase functions: phase [...] -> blend weights [..., K], numpy or torch --------------------------

def _array_module(phase):
    return torch if isinstance(phase, torch.Tensor) else np


def _kernel_centres(phase, count: int):
    if isinstance(phase, torch.Tensor):
        return torch.arange(count, dtype=phase.dtype, device=phase.device) / count
    return np.arange(count, dtype=np.asarray(phase).dtype) / count


def cyclic_distance(phase, centres):
    """Distance on the phase circle, [...] x [K] -> [..., K] in [0, 0.5]; continuous across 0/1."""
    gap = (phase[..., None] - centres) % 1.0
    return 0.5 - abs(0.5 - gap)


def rbf_phase_weights(phase, num_kernels: int = 8, beta: float = 8.0):
    """Normalised Gaussian kernels at centres k/K: w_k = exp(-beta * d(p, c_k)^2) / sum.

    d is the CYCLIC distance: the non-cyclic (p - c)^2 of some tutorials jumps at the 0/1 seam.
    """
    xp = _array_module(phase)
    distance = cyclic_distance(phase, _kernel_centres(phase, num_kernels))
    unnormalised = xp.exp(-beta * distance * distance)
    return unnormalised / unnormalised.sum(-1)[..., None]


def catmull_rom_kernel(distance):
    """Catmull-Rom (a = -0.5) interpolation kernel of |offset| in control-point units; 0 beyond 2."""
    xp = _array_module(distance)
    near = (1.5 * distance - 2.5) * distance * distance + 1.0
    far = ((-0.5 * distance + 2.5) * distance - 4.0) * distance + 2.0
    return xp.where(distance <= 1.0, near, xp.where(distance < 2.0, far, 0.0 * distance))


def cubic_phase_weights(phase):
    """Cyclic Catmull-Rom spline over 4 control sets at phases 0, 1/4, 1/2, 3/4 [PFNN].

    Written as an interpolation kernel of the cyclic distance, this equals PFNN's
    `cubic(y0, y1, y2, y3, mu)` over the 4 neighbouring control points; the weights sum to 1 and are
    exactly one-hot at p = k/4. Some weights are slightly negative, as in any Catmull-Rom spline.
    """
    count = CUBIC_CONTROL_POINTS
    return catmull_rom_kernel(count * cyclic_distance(phase, _kernel_centres(phase, count)))


def phase_weights(phase, phase_function: str, num_kernels: int = 8, beta: float = 8.0):
    """Blend weights [..., K] for the configured phase function."""
    if phase_function == "cubic":
        return cubic_phase_weights(phase)
    if phase_function == "rbf":
        return rbf_phase_weights(phase, num_kernels, beta)
    raise ValueError(f"unknown phase function {phase_function!r}")


def check_style(style, num_styles: int, batch: int):
    """The style weights a model takes: None for a model without styles (any style given is ignored);
    [B, S] for one with S styles (a [S] vector is broadcast); ValueError when missing or mis-sized."""
    if num_styles == 0:
        return None
    if style is None:
        raise ValueError(f"this model is conditioned on {num_styles} styles: pass style weights [B, {num_styles}]")
    if style.ndim == 1:
        style = style[None].expand(batch, -1) if isinstance(style, torch.Tensor) else np.broadcast_to(style, (batch, len(style)))
    if tuple(style.shape) != (batch, num_styles):
        raise ValueError(f"style weights have shape {tuple(style.shape)}, expected ({batch}, {num_styles})")
    return style


# --- layers and model -------------------------------------------------------------------------------

class PhaseFunctionedLinear(nn.Module):
    """K weight sets W [K, in, out], b [K, out]; y = sum_k w_k * (x @ W_k + b_k).

    Every kernel is evaluated: skipping kernels with negligible weight does not pay here, since cubic
    uses its 4 sets at every phase and rbf with K=8, beta=8 gives the farthest kernel still ~3%.
    """

    def __init__(self, in_features: int, out_features: int, num_kernels: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(num_kernels, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(num_kernels, out_features))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # nn.Linear's default init, the same draw for every kernel: the untrained layer does not depend
        # on the phase and has the usual activation scale (blending independent draws would shrink it);
        # gradients are weighted by w_k(p), so the kernels separate as training proceeds.
        in_features = self.weight.shape[1]
        bound = 1.0 / math.sqrt(in_features)
        with torch.no_grad():
            first = torch.empty(in_features, self.weight.shape[2]).uniform_(-bound, bound)
            self.weight.copy_(first.expand_as(self.weight))
            self.bias.copy_(torch.empty(self.bias.shape[1]).uniform_(-bound, bound).expand_as(self.bias))

    def forward(self, x: torch.Tensor, blend: torch.Tensor) -> torch.Tensor:
        """x [B, in], blend [B, K] -> [B, out]."""
        per_kernel = torch.matmul(x, self.weight)               # [K, B, out], one batched matmul
        blended = torch.bmm(blend.unsqueeze(1), per_kernel.transpose(0, 1)).squeeze(1)
        return blended + blend @ self.bias


class PFNN(nn.Module):
    """Normalised input x [B, in] and phase [B] -> normalised output y [B, out].

    `beta` is a plain attribute read at every forward, so `model.beta = 4.0` acts on the next call.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.beta = float(config.beta)
        self.layers = nn.ModuleList(
            PhaseFunctionedLinear(n_in, n_out, config.kernel_count) for n_in, n_out in config.layer_sizes()
        )
        self.dropout = nn.Dropout(config.dropout)

    def phase_weights(self, phase: torch.Tensor) -> torch.Tensor:
        return phase_weights(phase, self.config.phase_function, self.config.num_kernels, self.beta)

    def forward(self, x: torch.Tensor, phase: torch.Tensor, style: torch.Tensor | None = None) -> torch.Tensor:
        """x [B, in], phase [B], style [B, S] weights (required when num_styles > 0) -> y [B, out]."""
        blend = self.phase_weights(phase.to(x.dtype))
        style = check_style(style, self.config.num_styles, len(x))
        hidden = x
        for index, layer in enumerate(self.layers):
            hidden = self.dropout(hidden)
            if style is not None:
                hidden = torch.cat([hidden, style.to(hidden.dtype)], dim=-1)
            hidden = layer(hidden, blend)
            if index < len(self.layers) - 1:
                hidden = nn.functional.elu(hidden)
        return hidden

