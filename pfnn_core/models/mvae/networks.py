"""The motion VAE's networks (torch, for training) and their numpy twins (for the runtime at batch 1).

Owns `MVAEConfig`, the encoder (`MLPEncoder`: the last frames flattened, the newest frame fed into every
layer [Ling et al. 2020]; `GRUEncoder`: a 2-layer GRU over the window), the mixture-of-experts decoder
(`MoEDecoder`: the latent fed into every layer, experts blended by a gating network), the control
policy (`Policy`: an MLP with LayerNorm and residual blocks from the current latent, the last poses
and the condition to the next latent), and `NumpyMVAE`, the decoder and policy as float32 numpy arrays.

Every frame is a normalised output row of the feature contract (`features.layout`: root motion, phase
change, contacts, future trajectory, joint positions, velocities and 6D rotations, root frame). The
condition is the phase as (sin, cos), the control (the trajectory the PFNN is given, normalised) and
the style weights.

Each mixture layer holds its K experts' weights side by side, [in, K * out], and blends the experts'
OUTPUTS with the gate's weights: the same numbers as blending the weights, without building a
per-sample weight matrix.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch
from torch import nn
from torch.nn import functional

ENCODERS = ("mlp", "gru")


@dataclass
class MVAEConfig:
    frame_size: int              # width of one frame (the output layout's size)
    control_size: int            # width of the control features (trajectory positions, facings, gait)
    num_styles: int = 0          # style weights in the condition; 0 = none
    latent_size: int = 32        # latent dimensions [Ling et al.: 32]
    encoder: str = "mlp"         # 'mlp' (frames flattened) or 'gru' (2-layer GRU over the window)
    window: int = 2              # frames the encoder sees, the newest the frame it encodes [Ling et al.: 2]
    encoder_hidden: int = 256
    decoder_hidden: int = 256
    experts: int = 6             # decoder experts [Ling et al.: 6]
    gate_hidden: int = 64        # gating network 64-64-experts [Ling et al.]
    policy_hidden: int = 256
    policy_blocks: int = 2       # residual blocks of the policy
    policy_frames: int = 2       # last frames the policy sees
    carry: float = 0.0           # share of the previous frame carried into the next: frame = carry x previous + output

    def __post_init__(self) -> None:
        if self.encoder not in ENCODERS:
            raise ValueError(f"encoder must be one of {ENCODERS}, got {self.encoder!r}")
        for name in ("frame_size", "control_size", "latent_size", "window", "encoder_hidden", "decoder_hidden",
                     "experts", "gate_hidden", "policy_hidden", "policy_blocks", "policy_frames"):
            if _number(self, name, int) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.window < 2:
            raise ValueError(f"window must be >= 2 (the frame encoded and one before it), got {self.window}")
        if not 0.0 <= _number(self, "carry", float) <= 1.0:
            raise ValueError(f"carry must be within 0..1, got {self.carry}")
        if self.policy_frames > self.window:
            raise ValueError(f"policy_frames ({self.policy_frames}) cannot exceed the window ({self.window})")

    @property
    def condition_size(self) -> int:
        """sin/cos of the phase, the control, the style weights."""
        return 2 + self.control_size + self.num_styles

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "MVAEConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown motion-VAE config keys: {unknown}")
        return cls(**values)


def _number(config, name: str, kind):
    """A config field as `kind`, or a ValueError naming the field (a stored config may hold anything)."""
    try:
        return kind(getattr(config, name))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {getattr(config, name)!r}") from None


class MLPEncoder(nn.Module):
    """Window [B, W, F] -> (mu, log-variance) [B, Z]: ELU layers over the flattened window, the newest
    frame fed into every layer."""

    def __init__(self, config: MVAEConfig):
        super().__init__()
        frame, hidden = config.frame_size, config.encoder_hidden
        self.first = nn.Linear(frame * config.window, hidden)
        self.second = nn.Linear(frame + hidden, hidden)
        self.out = nn.Linear(frame + hidden, 2 * config.latent_size)

    def forward(self, window: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        newest = window[:, -1]
        hidden = functional.elu(self.first(window.flatten(1)))
        hidden = functional.elu(self.second(torch.cat([newest, hidden], -1)))
        mu, logvar = self.out(torch.cat([newest, hidden], -1)).chunk(2, dim=-1)
        return mu, logvar


class GRUEncoder(nn.Module):
    """Window [B, W, F] -> (mu, log-variance) [B, Z]: a 2-layer GRU over the window, its last output and
    the newest frame through a linear layer."""

    def __init__(self, config: MVAEConfig):
        super().__init__()
        self.gru = nn.GRU(config.frame_size, config.encoder_hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(config.frame_size + config.encoder_hidden, 2 * config.latent_size)

    def forward(self, window: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        outputs, _ = self.gru(window)
        mu, logvar = self.out(torch.cat([window[:, -1], outputs[:, -1]], -1)).chunk(2, dim=-1)
        return mu, logvar


def make_encoder(config: MVAEConfig) -> nn.Module:
    return GRUEncoder(config) if config.encoder == "gru" else MLPEncoder(config)


class MixtureLinear(nn.Module):
    """K experts' weights [in, K * out] and biases [K * out]; y = sum_k g_k (x W_k + b_k)."""

    def __init__(self, in_features: int, out_features: int, experts: int):
        super().__init__()
        self.experts, self.out_features = experts, out_features
        bound = 1.0 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.empty(in_features, experts * out_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(experts * out_features).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        per_expert = (x @ self.weight + self.bias).view(len(x), self.experts, self.out_features)
        return torch.bmm(gate.unsqueeze(1), per_expert).squeeze(1)


class MoEDecoder(nn.Module):
    """(latent [B, Z], previous frame [B, F], condition [B, C]) -> next frame [B, F] (normalised).

    Three mixture layers (hidden, hidden, frame), the latent concatenated to every layer's input; the
    gate (64-64-K, softmax) sees the latent, the previous frame and the condition. With `carry` c > 0 the
    frame is c x the previous frame plus the layers' output (c = 1: they give the change from it; below 1
    the carried share decays toward the mean frame, so an error does not build up)."""

    def __init__(self, config: MVAEConfig):
        super().__init__()
        latent, hidden, experts = config.latent_size, config.decoder_hidden, config.experts
        inputs = config.frame_size + config.condition_size
        self.gate = nn.Sequential(nn.Linear(latent + inputs, config.gate_hidden), nn.ELU(),
                                  nn.Linear(config.gate_hidden, config.gate_hidden), nn.ELU(),
                                  nn.Linear(config.gate_hidden, experts))
        self.layers = nn.ModuleList([MixtureLinear(latent + inputs, hidden, experts),
                                     MixtureLinear(latent + hidden, hidden, experts),
                                     MixtureLinear(latent + hidden, config.frame_size, experts)])
        self.carry = float(config.carry)

    def forward(self, z: torch.Tensor, previous: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        hidden = torch.cat([previous, condition], -1)
        gate = torch.softmax(self.gate(torch.cat([z, hidden], -1)), dim=-1)
        for index, layer in enumerate(self.layers):
            hidden = layer(torch.cat([z, hidden], -1), gate)
            if index < len(self.layers) - 1:
                hidden = functional.elu(hidden)
        return self.carry * previous + hidden if self.carry else hidden


class Policy(nn.Module):
    """(current latent [B, Z], last frames [B, P, F], condition [B, C]) -> next latent [B, Z]:
    a linear input layer, residual blocks (LayerNorm, linear, ELU, linear), LayerNorm, ELU and a linear
    output layer."""

    def __init__(self, config: MVAEConfig):
        super().__init__()
        inputs = config.latent_size + config.policy_frames * config.frame_size + config.condition_size
        hidden = config.policy_hidden
        self.frames = config.policy_frames
        self.first = nn.Linear(inputs, hidden)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.ELU(),
                                                  nn.Linear(hidden, hidden)) for _ in range(config.policy_blocks))
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, config.latent_size)

    def forward(self, z: torch.Tensor, frames: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        hidden = self.first(torch.cat([z, frames[:, -self.frames:].flatten(1), condition], -1))
        for block in self.blocks:
            hidden = hidden + block(hidden)
        return self.out(functional.elu(self.norm(hidden)))


class MotionVAE(nn.Module):
    """The encoder, decoder and policy of one motion VAE."""

    def __init__(self, config: MVAEConfig):
        super().__init__()
        self.config = config
        self.encoder = make_encoder(config)
        self.decoder = MoEDecoder(config)
        self.policy = Policy(config)


# --- numpy runner ---------------------------------------------------------------------------------

def _elu(values: np.ndarray) -> np.ndarray:
    return np.where(values > 0.0, values, np.expm1(np.minimum(values, 0.0)))


def _layer_norm(values: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = values.mean(-1, keepdims=True)
    centred = values - mean
    return centred / np.sqrt((centred * centred).mean(-1, keepdims=True) + eps) * weight + bias


class NumpyMVAE:
    """The decoder and policy of a `MotionVAE` as float32 numpy arrays (the runtime's batch-1 path)."""

    def __init__(self, model: MotionVAE):
        def array(tensor):
            return np.ascontiguousarray(tensor.detach().cpu().numpy(), np.float32)

        decoder, policy = model.decoder, model.policy
        self.experts = model.config.experts
        self.carry = np.float32(model.config.carry)
        self.gate = [(array(layer.weight).T.copy(), array(layer.bias)) for layer in decoder.gate if isinstance(layer, nn.Linear)]
        self.layers = [(array(layer.weight), array(layer.bias), layer.out_features) for layer in decoder.layers]
        self.policy_frames = policy.frames
        self.first = (array(policy.first.weight).T.copy(), array(policy.first.bias))
        self.blocks = [((array(b[0].weight), array(b[0].bias), b[0].eps), (array(b[1].weight).T.copy(), array(b[1].bias)),
                        (array(b[3].weight).T.copy(), array(b[3].bias))) for b in policy.blocks]
        self.norm = (array(policy.norm.weight), array(policy.norm.bias), policy.norm.eps)
        self.out = (array(policy.out.weight).T.copy(), array(policy.out.bias))

    def decode(self, z: np.ndarray, previous: np.ndarray, condition: np.ndarray) -> np.ndarray:
        hidden = np.concatenate([previous, condition], -1).astype(np.float32)
        gate = np.concatenate([z, hidden], -1)
        for index, (weight, bias) in enumerate(self.gate):
            gate = gate @ weight + bias
            if index < len(self.gate) - 1:
                gate = _elu(gate)
        gate = np.exp(gate - gate.max(-1, keepdims=True))
        gate /= gate.sum(-1, keepdims=True)
        for index, (weight, bias, width) in enumerate(self.layers):
            per_expert = (np.concatenate([z, hidden], -1) @ weight + bias).reshape(len(z), self.experts, width)
            hidden = np.matmul(gate[:, None], per_expert)[:, 0]
            if index < len(self.layers) - 1:
                hidden = _elu(hidden)
        return self.carry * previous + hidden if self.carry else hidden

    def policy(self, z: np.ndarray, frames: np.ndarray, condition: np.ndarray) -> np.ndarray:
        inputs = np.concatenate([z, frames[:, -self.policy_frames:].reshape(len(z), -1), condition], -1)
        hidden = inputs.astype(np.float32) @ self.first[0] + self.first[1]
        for norm, inner, outer in self.blocks:
            hidden = hidden + (_elu(_layer_norm(hidden, *norm) @ inner[0] + inner[1]) @ outer[0] + outer[1])
        return _elu(_layer_norm(hidden, *self.norm)) @ self.out[0] + self.out[1]
