"""The network of the runtime tick: normalise -> PFNN -> unnormalise for a batch, on its device.

Owns `resolve_device`, `Network` (its own copy of the checkpoint's model on the chosen device, plus
the checkpoint facts the tick reads: layouts, skeleton plan, stride, gait speeds, floor heights) and
`FoldedPFNN`, the CPU runner.

Paths: 'numpy' runs `FoldedPFNN` (float32, CPU; the fastest at batch 1 on small CPUs), 'torch' the
torch model (on CUDA: inputs packed into one pinned buffer, one copy in and one copy out per tick,
on the network's own CUDA stream, optionally replayed as a CUDA graph); 'auto' = numpy on the CPU,
torch on CUDA.

`FoldedPFNN` folds the input and output normalisation into the first and last layers (a feature
whose training std sat at the floor is dropped: it never varied in the data, and the network is
hypersensitive to it), and has three modes [PFNN demo]: 'exact' (every kernel, blended per
character), 'linear' (weights precomputed at `LINEAR_BINS` phases, interpolated linearly) and
'constant' (the nearest of `CONSTANT_BINS` precomputed phases). The binned modes cost one or two
weight sets per layer instead of all K, and group a crowd's characters by bin.
"""
from __future__ import annotations

import logging
import time

import numpy as np
import torch

from pfnn_core.features.contract import FUTURE_OFFSETS, SIM_FPS, TRAJ_OFFSETS
from pfnn_core.math.mat3 import njit
from pfnn_core.models.pfnn import PFNN, check_style, phase_weights
from pfnn_core.runtime.guards import tick_limits
from pfnn_core.runtime.pose import skeleton_plan

log = logging.getLogger(__name__)

# Input features whose training std sat at the normalisation floor (1e-3) never varied in the data
# (e.g. the hips' x, z in their own root frame); the network is hypersensitive to them (z = error / 1e-3),
# so they are held at their training value instead of being fed back.
CONSTANT_FEATURE_STD = 1.001e-3
LINEAR_BINS = 16
CONSTANT_BINS = 50
STRIDE_GRID = 96  # speeds of the per-style stride table


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def _elu(values: np.ndarray) -> np.ndarray:
    return np.where(values > 0.0, values, np.expm1(np.minimum(values, 0.0)))


class FoldedPFNN:
    """A PFNN as float32 numpy arrays with the normalisation folded in: raw x [B, nx], phase [B] and
    style [B, S] -> raw y [B, ny]. Same weights and phase function as `model.PFNN` (no dropout)."""

    def __init__(self, model: PFNN, norm: dict, constant_inputs: np.ndarray):
        config = model.config
        self.config, self.beta = config, float(model.beta)
        self.kernels = config.kernel_count
        x_mean, x_std, y_mean, y_std = (norm[name].detach().cpu().double().numpy() for name in ("x_mean", "x_std", "y_mean", "y_std"))
        weights = [layer.weight.detach().cpu().double().numpy() for layer in model.layers]  # [K, in, out]
        biases = [layer.bias.detach().cpu().double().numpy() for layer in model.layers]  # [K, out]
        inputs = config.input_size
        scale = np.where(constant_inputs, 0.0, 1.0 / x_std)
        first, first_bias = weights[0].copy(), biases[0].copy()
        first_bias -= np.einsum("i,kio->ko", x_mean * scale, first[:, :inputs])
        first[:, :inputs] *= scale[None, :, None]
        weights[0], biases[0] = first, first_bias
        weights[-1], biases[-1] = weights[-1] * y_std, biases[-1] * y_std + y_mean  # blend weights sum to 1
        self.weight_sets = [w.astype(np.float32) for w in weights]  # [K, in, out]
        self.bias_sets = [b.astype(np.float32) for b in biases]  # [K, out]
        self.weights = [np.ascontiguousarray(w.transpose(1, 0, 2).reshape(w.shape[1], -1)) for w in self.weight_sets]
        self.biases = self.bias_sets
        self._bins: dict = {}

    def blend(self, phase) -> np.ndarray:
        return phase_weights(np.asarray(phase, np.float32), self.config.phase_function, self.config.num_kernels,
                             self.beta).astype(np.float32)

    def _layer_input(self, hidden, style):
        return hidden if style is None else np.concatenate([hidden, style], axis=-1)

    def __call__(self, x: np.ndarray, phase: np.ndarray, style: np.ndarray | None = None, mode: str = "exact") -> np.ndarray:
        x = np.asarray(x, np.float32)
        style = None if style is None else np.asarray(check_style(style, self.config.num_styles, len(x)), np.float32)
        if mode == "exact":
            return self._exact(x, np.asarray(phase), style)
        return self._binned(x, np.asarray(phase), style, mode)

    def _exact(self, x, phase, style):
        blend = self.blend(phase)
        hidden, last = x, len(self.weights) - 1
        for index, (weight, bias) in enumerate(zip(self.weights, self.biases)):
            hidden = self._layer_input(hidden, style)
            per_kernel = (hidden @ weight).reshape(hidden.shape[0], self.kernels, -1)
            hidden = np.matmul(blend[:, None], per_kernel)[:, 0] + blend @ bias
            if index < last:
                hidden = _elu(hidden)
        return hidden

    def bins(self, mode: str) -> tuple[list, list, int]:
        """Per layer the weights and biases blended at N phases k/N (cached per mode and beta): for
        'constant' W [N, in, out], b [N, out]; for 'linear' each bin side by side with the next one,
        W [N, in, 2 out], b [N, 2 out], so a character between two bins costs one matrix product."""
        count = LINEAR_BINS if mode == "linear" else CONSTANT_BINS
        key = (mode, self.beta)
        if key not in self._bins:
            blend = self.blend(np.arange(count) / count).astype(np.float64)
            weights = [np.einsum("nk,kio->nio", blend, w.astype(np.float64)).astype(np.float32) for w in self.weight_sets]
            biases = [(blend @ b.astype(np.float64)).astype(np.float32) for b in self.bias_sets]
            if mode == "linear":
                following = (np.arange(count) + 1) % count
                weights = [np.ascontiguousarray(np.concatenate([w, w[following]], axis=2)) for w in weights]
                biases = [np.concatenate([b, b[following]], axis=1) for b in biases]
            self._bins = {key: (weights, biases, count)}
        return self._bins[key]

    def _binned(self, x, phase, style, mode):
        """Characters sorted by bin, each bin's run of rows through its weights with one product."""
        weights, biases, count = self.bins(mode)
        position = np.asarray(phase, np.float64) % 1.0 * count
        linear = mode == "linear"
        lower = (np.floor(position) if linear else np.rint(position)).astype(np.intp) % count
        share = (position - np.floor(position)).astype(np.float32)[:, None]
        order = np.argsort(lower, kind="stable")
        bins, starts = np.unique(lower[order], return_index=True)
        ends = np.append(starts[1:], len(order))
        hidden, share = x[order], share[order]
        style = None if style is None else style[order]
        last = len(weights) - 1
        for index, (weight, bias) in enumerate(zip(weights, biases)):
            hidden = self._layer_input(hidden, style)
            width = bias.shape[1] // 2 if linear else bias.shape[1]
            out = np.empty((len(hidden), width), np.float32)
            for b, start, end in zip(bins, starts, ends):
                result = hidden[start:end] @ weight[b] + bias[b]
                if linear:
                    result = result[:, :width] + share[start:end] * (result[:, width:] - result[:, :width])
                out[start:end] = result
            hidden = _elu(out) if index < last else out
        y = np.empty_like(hidden)
        y[order] = hidden
        return y


@njit
def _stride_lengths(speed, style, top_speed, table, out):
    """Per character: each style's stride length at its speed (linear on the table's even speed grid
    0..top_speed, held beyond), blended by the style weights."""
    last = table.shape[1] - 1
    for b in range(speed.shape[0]):
        position = min(max(speed[b] / top_speed, 0.0), 1.0) * last
        lower = min(int(position), last - 1)
        share = position - lower
        length = 0.0
        for s in range(style.shape[1]):
            length += style[b, s] * (table[s, lower] * (1.0 - share) + table[s, lower + 1] * share)
        out[b] = length


class Network:
    """The model of one checkpoint on one device, and what the tick needs from the checkpoint.

    The network holds its own copy of the checkpoint's model (moving it to a device never moves a
    model someone else holds).
    """

    def __init__(self, checkpoint, device: str = "auto", path: str = "auto", cuda_graph: bool = True):
        self.checkpoint = checkpoint
        self.device = resolve_device(device)
        if path == "auto":
            path = "torch" if self.device.type == "cuda" else "numpy"
        if path not in ("numpy", "torch"):
            raise ValueError(f"path must be 'auto', 'numpy' or 'torch', got {path!r}")
        if path == "numpy" and self.device.type != "cpu":
            raise ValueError("the numpy path runs on the CPU only")
        self.path = path
        self.config = checkpoint.config
        self.model = PFNN(checkpoint.config)
        self.model.load_state_dict(checkpoint.model.state_dict())
        self.model.beta = float(getattr(checkpoint.model, "beta", checkpoint.config.beta))
        self.model.to(self.device).eval()
        self.norm = {name: value.detach().to(self.device, torch.float32) for name, value in checkpoint.norm.items()}
        self.norm_np = {name: value.cpu().numpy() for name, value in self.norm.items()}
        self.constant_inputs = self.norm_np["x_std"] <= CONSTANT_FEATURE_STD
        self.folded = FoldedPFNN(self.model, self.norm, self.constant_inputs) if path == "numpy" else None
        self.num_styles = int(checkpoint.config.num_styles)
        # The style input's order (`meta["styles"]["names"]`, written by training); indices when absent.
        self.style_names = list((checkpoint.meta.get("styles") or {}).get("names") or
                                [str(i) for i in range(self.num_styles)])
        self._cuda = _CudaRunner(self, cuda_graph) if self.device.type == "cuda" and path == "torch" else None

        self.x_layout, self.y_layout = checkpoint.layout
        meta = checkpoint.meta
        skeleton = meta["skeleton"]
        self.skeleton = skeleton
        self.names = list(skeleton["names"])
        self.parents = np.asarray(skeleton["parents"], dtype=int)
        self.offsets = np.asarray(skeleton["offsets"], dtype=float)
        self.plan = skeleton_plan(self.names, self.parents, self.offsets, skeleton.get("hips"),
                                  skeleton.get("contact_joints"))
        self.anchor = self.plan.anchor
        self.contact_joints = [int(j) for j in self.plan.contact_joints]
        self.stride = meta.get("stride") or {"speed": [1.0], "stride_length": [1.2]}
        self.stride_grid, self.style_stride = self._style_strides(meta)
        self.stance = self._stored_stance(meta)
        self.gait_speeds = {k: float(v) for k, v in (meta.get("gait_speeds") or {}).items() if isinstance(v, (int, float))}
        self.floor_heights = self._stored_floor_heights(meta)
        self.limits = tick_limits(self.plan.extent, self.gait_speeds)
        self.sim_fps = float(SIM_FPS)
        offsets = np.asarray(TRAJ_OFFSETS)
        self.past_offsets = offsets[offsets < 0]  # frames, oldest first
        self.future_offsets = np.asarray(FUTURE_OFFSETS)  # frames the network predicts
        self.future_times = self.future_offsets / self.sim_fps  # s
        self.past_back = -self.past_offsets  # ticks before the newest history row (the current root)
        self.future_rows = np.searchsorted(self.future_offsets, offsets[offsets > 0])
        self._blend_cache: dict = {}

    @staticmethod
    def _stored_floor_heights(meta) -> np.ndarray | None:
        """The planted height of each contact joint in the training mocap (`meta['floor_heights']`, m)."""
        heights = meta.get("floor_heights")
        if heights is None:
            return None
        heights = np.asarray(heights, dtype=float)
        if heights.shape != (4,) or not np.isfinite(heights).all():
            raise ValueError(f"checkpoint field floor_heights: expected 4 finite heights (m), got {meta['floor_heights']!r}")
        return heights

    def _style_strides(self, meta) -> tuple[np.ndarray, np.ndarray]:
        """Stride length per style on a common speed grid: (speeds [G], lengths [max(S, 1), G]); a style
        without stride statistics (and a model without styles) takes the checkpoint's pooled ones."""
        stats = (meta.get("styles") or {}).get("stats") or {}
        strides = [self.stride] + [(stats.get(name) or {}).get("stride") for name in self.style_names]
        top = max(max(np.asarray(s["speed"], float).max(initial=0.0) for s in strides if s), 1.0)
        grid = np.linspace(0.0, 1.25 * top, STRIDE_GRID)
        table = [np.interp(grid, (s or self.stride)["speed"], (s or self.stride)["stride_length"]) for s in strides[1:]]
        return grid, np.asarray(table if table else [np.interp(grid, self.stride["speed"], self.stride["stride_length"])])

    def stride_length(self, speed, style) -> np.ndarray:
        """Stride length (m per cycle) at `speed` [B] for style weights `style` [B, S]: the styles' own
        stride-by-speed statistics blended by the weights (the pooled statistics without styles)."""
        speed = np.ascontiguousarray(speed, dtype=np.float64)
        if not (self.num_styles and style is not None and np.shape(style)[-1] == len(self.style_stride)):
            style = np.ones((len(speed), 1))
        out = np.empty(len(speed))
        _stride_lengths(speed, np.ascontiguousarray(style, dtype=np.float64), self.stride_grid[-1], self.style_stride,
                        out)
        return out

    @staticmethod
    def _stored_stance(meta) -> np.ndarray | None:
        """The mocap's standing stance of the contact joints relative to the hips in the body frame
        (`meta['stance']['positions']`, [4, 3] m), or None (no settling steps)."""
        stance = (meta.get("stance") or {}).get("positions")
        if stance is None:
            return None
        stance = np.asarray(stance, dtype=float)
        if stance.shape != (4, 3) or not np.isfinite(stance).all():
            raise ValueError(f"checkpoint field stance.positions: expected [4, 3] finite positions (m), got {stance.tolist()}")
        return stance

    @property
    def num_joints(self) -> int:
        return len(self.names)

    @property
    def beta(self) -> float:
        return float(self.model.beta)

    def set_beta(self, beta: float) -> None:
        beta = float(beta)
        if beta != self.model.beta:
            self.model.beta = beta
            if self.folded is not None:
                self.folded.beta = beta

    def blend_weights(self, bias: float, bias_strafe: float) -> np.ndarray:
        """[2, F] trajectory blend weights (normal, strafing), cached for the current biases."""
        key = (float(bias), float(bias_strafe))
        weights = self._blend_cache.get(key)
        if weights is None:
            from pfnn_core.runtime.trajectory import trajectory_blend_weights

            weights = trajectory_blend_weights(len(self.future_offsets), np.array(key))
            if len(self._blend_cache) > 8:
                self._blend_cache.clear()
            self._blend_cache[key] = weights
        return weights

    def default_style(self, batch: int) -> np.ndarray:
        """[B, S] style weights when none are given: 'normal' when the model knows it, else the first
        (zero-width without styles)."""
        style = np.zeros((batch, self.num_styles))
        if self.num_styles:
            style[:, self.style_names.index("normal") if "normal" in self.style_names else 0] = 1.0
        return style

    def predict(self, x: np.ndarray, phase: np.ndarray, style: np.ndarray | None = None, mode: str = "exact") -> np.ndarray:
        """Raw (unnormalised) x [B, nx], phase [B] and style [B, S] -> raw y [B, ny] as float64.
        `mode` applies to the numpy path ('exact' elsewhere)."""
        if self.num_styles and style is None:
            style = self.default_style(len(x))
        if not self.num_styles:
            style = None
        if self.path == "numpy":
            return self.folded(x, phase, style, mode).astype(np.float64)
        with torch.no_grad():
            if self._cuda is not None:
                return self._cuda(x, phase, style)
            x = np.where(self.constant_inputs, self.norm_np["x_mean"], x)
            packed = np.concatenate([x, np.asarray(phase)[:, None]] + ([style] if style is not None else []), axis=1)
            return self._forward(torch.from_numpy(packed.astype(np.float32)).to(self.device)).cpu().numpy().astype(np.float64)

    def _forward(self, packed: torch.Tensor) -> torch.Tensor:
        """Packed [x | phase | style] on the device -> raw y (normalisation on the device)."""
        inputs = self.config.input_size
        x, phase = packed[:, :inputs], packed[:, inputs]
        style = packed[:, inputs + 1:] if self.num_styles else None
        y = self.model((x - self.norm["x_mean"]) / self.norm["x_std"], phase, style)
        return y * self.norm["y_std"] + self.norm["y_mean"]

    def mean_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The training set's mean input pose (root frame): a neutral first pose."""
        parts = self.x_layout.unpack(self.norm_np["x_mean"].astype(float))
        return np.asarray(parts["joint_pos"], dtype=float), np.zeros_like(np.asarray(parts["joint_pos"], dtype=float))


class _CudaRunner:
    """The torch path on CUDA: one pinned host buffer in, one out, the network's own stream (so the
    copy back never queues behind another stream's work, e.g. training in the viewer), and the
    forward pass captured as a CUDA graph per batch size and beta when capture works."""

    def __init__(self, network: Network, use_graph: bool):
        self.network, self.use_graph = network, use_graph
        self.stream = torch.cuda.Stream(network.device)
        self.key = None  # (batch, beta) the buffers and graph were made for
        self.graph = None

    def _prepare(self, batch: int) -> None:
        network = self.network
        width = network.config.input_size + 1 + network.num_styles
        self.host_in = torch.empty((batch, width), dtype=torch.float32, pin_memory=True)
        self.host_out = torch.empty((batch, network.config.output_size), dtype=torch.float32, pin_memory=True)
        self.device_in = torch.zeros((batch, width), dtype=torch.float32, device=network.device)
        self.graph, self.device_out = None, None
        self.key = (batch, network.beta)
        if not self.use_graph:
            return
        try:
            with torch.cuda.stream(self.stream):
                for _ in range(3):  # warm-up on the capture stream, as CUDA graphs require
                    network._forward(self.device_in)
                self.stream.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=self.stream):
                    self.device_out = network._forward(self.device_in)
            self.graph = graph
        except Exception as error:  # some drivers/builds cannot capture: run eagerly
            log.warning("CUDA graph capture failed (%s); running the network eagerly", error)
            self.use_graph, self.graph = False, None

    def __call__(self, x, phase, style) -> np.ndarray:
        network = self.network
        batch = len(x)
        if self.key != (batch, network.beta):
            self._prepare(batch)
        host = self.host_in.numpy()
        inputs = network.config.input_size
        host[:, :inputs] = np.where(network.constant_inputs, network.norm_np["x_mean"], x)
        host[:, inputs] = phase
        if style is not None:
            host[:, inputs + 1:] = style
        with torch.cuda.stream(self.stream):
            self.device_in.copy_(self.host_in, non_blocking=True)
            if self.graph is not None:
                self.graph.replay()
                out = self.device_out
            else:
                out = network._forward(self.device_in)
            self.host_out.copy_(out, non_blocking=True)
        self.stream.synchronize()
        return self.host_out.numpy().astype(np.float64)


def timed(function, *args, **kwargs):
    """(result, milliseconds) of one call."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, (time.perf_counter() - start) * 1000.0
