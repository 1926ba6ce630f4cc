"""Benchmark of the PFNN layers on the CPU, one run, printed as a table.

1. Training throughput at batch 256 (forward + backward + AdamW step) of the output-blending PFNN stack
   versus a reference stack that builds a per-sample weight matrix with einsum 'bk,kij->bij' (the slow
   tutorial way), same sizes: the real feature layout for a 22-joint skeleton, hidden 512.
2. Inference at batch 1 for the rbf and cubic phase functions, torch and numpy paths, against a plain
   3-layer MLP of the same sizes (the floor).

Usage: python benchmarks/bench_model.py [--threads 1] [--hidden 512] [--joints 22]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from torch import nn

from pfnn_core.features.layout import make_layouts
from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.pfnn.network import FoldedPFNN


class ReferenceEinsumPFNN(PFNN):
    """Same parameters as PFNN, but each layer blends the WEIGHT matrices per sample first."""

    def forward(self, x, phase):
        blend = self.phase_weights(phase)
        hidden = x
        for index, layer in enumerate(self.layers):
            weight = torch.einsum("bk,kij->bij", blend, layer.weight)      # [B, in, out]
            hidden = torch.bmm(self.dropout(hidden).unsqueeze(1), weight).squeeze(1) + blend @ layer.bias
            if index < len(self.layers) - 1:
                hidden = nn.functional.elu(hidden)
        return hidden


def plain_mlp(sizes: list[tuple[int, int]]) -> nn.Module:
    layers: list[nn.Module] = []
    for index, (n_in, n_out) in enumerate(sizes):
        layers.append(nn.Linear(n_in, n_out))
        if index < len(sizes) - 1:
            layers.append(nn.ELU())
    return nn.Sequential(*layers)


def training_samples_per_second(model: nn.Module, x, phase, target, steps: int) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model.train()

    def step():
        prediction = model(x, phase) if phase is not None else model(x)
        loss = nn.functional.smooth_l1_loss(prediction, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    step()  # warm-up
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * len(x) / (time.perf_counter() - start)


def median_ms(call, repeats: int) -> float:
    for _ in range(10):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--joints", type=int, default=22)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x_layout, y_layout = make_layouts(args.joints)
    nx, ny = x_layout.size, y_layout.size
    print(f"sizes: input {nx}, output {ny}, hidden {args.hidden}, 3 layers; torch threads {args.threads}")

    x, phase, target = torch.randn(args.batch, nx), torch.rand(args.batch), torch.randn(args.batch, ny)
    rows = []
    for form in ("rbf", "cubic"):
        config = ModelConfig(input_size=nx, output_size=ny, hidden_size=args.hidden, phase_function=form)
        blended = training_samples_per_second(PFNN(config), x, phase, target, args.steps)
        reference = training_samples_per_second(ReferenceEinsumPFNN(config), x, phase, target,
                                                max(2, args.steps // 2))
        rows.append((f"{form} K={config.kernel_count}", blended, reference))
    mlp_rate = training_samples_per_second(plain_mlp(ModelConfig(nx, ny, args.hidden).layer_sizes()),
                                           x, None, target, args.steps)
    print(f"\nTraining at batch {args.batch} (forward + backward + AdamW step), samples/s")
    print(f"{'phase function':<16}{'blend outputs':>15}{'einsum weights':>16}{'ratio':>8}")
    for name, blended, reference in rows:
        print(f"{name:<16}{blended:>15.0f}{reference:>16.0f}{blended / reference:>7.1f}x")
    print(f"{'plain MLP':<16}{mlp_rate:>15.0f}")

    print("\nInference at batch 1, median ms per call")
    print(f"{'model':<22}{'torch':>9}{'numpy':>9}")
    x1, phase1 = torch.randn(1, nx), torch.rand(1)
    x1_np, phase1_np = x1.numpy(), phase1.numpy()
    with torch.inference_mode():
        for form in ("rbf", "cubic"):
            model = PFNN(ModelConfig(nx, ny, args.hidden, phase_function=form)).eval()
            norm = {"x_mean": torch.zeros(nx), "x_std": torch.ones(nx), "y_mean": torch.zeros(ny), "y_std": torch.ones(ny)}
            runner = FoldedPFNN(model, norm, np.zeros(nx, bool))  # the runtime's CPU runner
            torch_ms = median_ms(lambda: model(x1, phase1), args.repeats)
            numpy_ms = median_ms(lambda: runner(x1_np, phase1_np), args.repeats)
            print(f"{f'PFNN {form} K={model.config.kernel_count}':<22}{torch_ms:>9.3f}{numpy_ms:>9.3f}")
        mlp = plain_mlp(ModelConfig(nx, ny, args.hidden).layer_sizes()).eval()
        weights = [(layer.weight.numpy().T.copy(), layer.bias.numpy().copy()) for layer in mlp if isinstance(layer, nn.Linear)]

        def numpy_mlp():
            hidden = x1_np
            for index, (weight, bias) in enumerate(weights):
                hidden = hidden @ weight + bias
                if index < len(weights) - 1:
                    hidden = np.where(hidden > 0, hidden, np.expm1(np.minimum(hidden, 0)))
            return hidden

        print(f"{'plain MLP (floor)':<22}{median_ms(lambda: mlp(x1), args.repeats):>9.3f}"
              f"{median_ms(numpy_mlp, args.repeats):>9.3f}")


if __name__ == "__main__":
    main()
