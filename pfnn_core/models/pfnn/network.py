"""The PFNN as a motion model (`base.MotionModel`): normalise -> PFNN -> unnormalise for a batch, on its device.

Owns `PFNNModel` (its own copy of the checkpoint's network on the chosen device) and `FoldedPFNN`, the
CPU runner.

Backends: 'numpy' runs `FoldedPFNN` (float32, CPU; the fastest at batch 1 on small CPUs), 'torch' the
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

from pfnn_core.models.base import ModelInput, ModelOutput, MotionModel
from pfnn_core.models.pfnn.model import PFNN, check_style, phase_weights

log = logging.getLogger(__name__)

# Input features whose training std sat at the normalisation floor (1e-3) never varied in the data
# (e.g. the hips' x, z in their own root frame); the network is hypersensitive to them (z = error / 1e-3),
# so they are held at their training value instead of being fed back.
CONSTANT_FEATURE_STD = 1.001e-3
LINEAR_BINS = 16
CONSTANT_BINS = 50


def _elu(values: np.ndarray) -> np.ndarray:
    return np.where(values > 0.0, values, np.expm1(np.minimum(values, 0.0)))


class FoldedPFNN:
    """A PFNN as float32 numpy arrays with the normalisation folded in: raw x [B, nx], phase [B] and
    style [B, S] -> raw y [B, ny]. Same weights and phase function as `model.PFNN` (no dropout)."""

    def __init__(self, model: PFNN, norm: dict, constant_inputs: np.ndarray):
        config = model.config
        self.config, self.beta = config, float(model.beta)
        self.kernels = config.kernel_count
        x_mean, x_std, y_mean, y_std = (norm[name].detach().cpu().double().numpy()
                                        for name in ("x_mean", "x_std", "y_mean", "y_std"))
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


class PFNNModel(MotionModel):
    """The PFNN of one checkpoint on one device (the motion-model interface, `models/base.py`).

    It holds its own copy of the checkpoint's network (moving it to a device never moves a network
    someone else holds). `backend`: 'numpy' runs `FoldedPFNN` (CPU), 'torch' the torch module ('auto' =
    numpy on the CPU, torch on CUDA).
    """

    kind = "pfnn"

    def __init__(self, checkpoint, device: str = "auto", backend: str = "auto", cuda_graph: bool = True):
        super().__init__(checkpoint, device)
        if backend == "auto":
            backend = "torch" if self.device.type == "cuda" else "numpy"
        if backend not in ("numpy", "torch"):
            raise ValueError(f"backend must be 'auto', 'numpy' or 'torch', got {backend!r}")
        if backend == "numpy" and self.device.type != "cpu":
            raise ValueError("the numpy backend runs on the CPU only")
        self.backend = backend
        self.config = checkpoint.config
        self.model = PFNN(checkpoint.config)
        self.model.load_state_dict(checkpoint.model.state_dict())
        self.model.beta = float(getattr(checkpoint.model, "beta", checkpoint.config.beta))
        self.model.to(self.device).eval()
        self.norm = {name: value.detach().to(self.device, torch.float32) for name, value in checkpoint.norm.items()}
        self.norm_np = {name: value.cpu().numpy() for name, value in self.norm.items()}
        self.constant_inputs = self.norm_np["x_std"] <= CONSTANT_FEATURE_STD
        self.folded = FoldedPFNN(self.model, self.norm, self.constant_inputs) if backend == "numpy" else None
        # The style input's width is the network's; its names the card's (indices when a checkpoint lacks them).
        self.num_styles = int(checkpoint.config.num_styles)
        if len(self.style_names) != self.num_styles:
            self.style_names = [str(i) for i in range(self.num_styles)]
        self._cuda = _CudaRunner(self, cuda_graph) if self.device.type == "cuda" and backend == "torch" else None

    @property
    def beta(self) -> float:
        return float(self.model.beta)

    def set_beta(self, beta: float) -> None:
        beta = float(beta)
        if beta != self.model.beta:
            self.model.beta = beta
            if self.folded is not None:
                self.folded.beta = beta

    def predict_batch(self, inputs: ModelInput) -> ModelOutput:
        self.set_beta(inputs.settings.beta)
        return ModelOutput(self.predict(inputs.x, inputs.phase, inputs.style, inputs.settings.network_mode), inputs.state)

    def predict(self, x: np.ndarray, phase: np.ndarray, style: np.ndarray | None = None, mode: str = "exact") -> np.ndarray:
        """Raw (unnormalised) x [B, nx], phase [B] and style [B, S] -> raw y [B, ny] as float64.
        `mode` applies to the numpy backend ('exact' elsewhere)."""
        if self.num_styles and style is None:
            style = self.default_style(len(x))
        if not self.num_styles:
            style = None
        if self.backend == "numpy":
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

    def mean_pose(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The training set's mean pose (root frame): a neutral first pose."""
        joint_pos = np.asarray(self.x_layout.unpack(self.norm_np["x_mean"].astype(float))["joint_pos"], dtype=float)
        joint_rot = self.y_layout.unpack(self.norm_np["y_mean"].astype(float))["joint_rot"]
        return joint_pos, np.zeros_like(joint_pos), np.asarray(joint_rot, dtype=float)


class _CudaRunner:
    """The torch path on CUDA: one pinned host buffer in, one out, the network's own stream (so the
    copy back never queues behind another stream's work, e.g. training in the viewer), and the
    forward pass captured as a CUDA graph per batch size and beta when capture works."""

    def __init__(self, network: PFNNModel, use_graph: bool):
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
