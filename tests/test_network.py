import numpy as np
import pytest
import torch

from pfnn_core.models.checkpoint import save_checkpoint
from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.pfnn.network import CONSTANT_BINS, LINEAR_BINS, PFNNModel
from pfnn_core.models.registry import load_checkpoint


def _inputs(network, batch, seed=0):
    rng = np.random.default_rng(seed)
    x = network.norm_np["x_mean"] + rng.normal(size=(batch, network.x_layout.size)) * network.norm_np["x_std"]
    return x.astype(np.float64), rng.uniform(0.0, 1.0, batch)


def _torch_reference(checkpoint, x, phase, style=None):
    """Normalise -> the checkpoint's own PFNN in torch (float64) -> unnormalise, constant inputs held."""
    model = PFNN(checkpoint.config).double().eval()
    model.load_state_dict({k: v.double() for k, v in checkpoint.model.state_dict().items()})
    norm = {k: v.double().cpu() for k, v in checkpoint.norm.items()}
    x = torch.as_tensor(x)
    x = torch.where(norm["x_std"] <= 1.001e-3, norm["x_mean"], x)
    with torch.no_grad():
        y = model((x - norm["x_mean"]) / norm["x_std"], torch.as_tensor(phase),
                  None if style is None else torch.as_tensor(style, dtype=torch.float64))
    return (y * norm["y_std"] + norm["y_mean"]).numpy()


def test_folded_cpu_network_equals_the_torch_model(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    network = PFNNModel(checkpoint, device="cpu", backend="numpy")
    x, phase = _inputs(network, 5)
    expected = _torch_reference(checkpoint, x, phase)
    np.testing.assert_allclose(network.predict(x, phase), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    torch_path = PFNNModel(checkpoint, device="cpu", backend="torch")
    np.testing.assert_allclose(torch_path.predict(x, phase), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    # one character at a time gives the same rows
    single = np.concatenate([network.predict(x[i:i + 1], phase[i:i + 1]) for i in range(5)])
    np.testing.assert_allclose(single, network.predict(x, phase), rtol=1e-4, atol=1e-5)  # float32 sums


def test_binned_modes_are_exact_at_their_bins_and_close_between(random_checkpoint):
    network = PFNNModel(load_checkpoint(random_checkpoint), device="cpu", backend="numpy")
    network.set_beta(4.0)  # kernels far enough apart that the phase matters
    x, _ = _inputs(network, 1)
    exact = lambda p: network.predict(np.repeat(x, len(p), 0), p)  # noqa: E731
    for mode, bins in (("linear", LINEAR_BINS), ("constant", CONSTANT_BINS)):
        at_bins = np.arange(bins) / bins
        np.testing.assert_allclose(network.predict(np.repeat(x, bins, 0), at_bins, mode=mode), exact(at_bins),
                                   rtol=1e-4, atol=1e-4)
    between = np.linspace(0.0, 1.0, 37, endpoint=False) + 0.013
    scale = np.abs(exact(between)).max()
    linear_error = np.abs(network.predict(np.repeat(x, 37, 0), between, mode="linear") - exact(between)).max()
    constant_error = np.abs(network.predict(np.repeat(x, 37, 0), between, mode="constant") - exact(between)).max()
    assert 0.0 < linear_error < 0.02 * scale and 0.0 < constant_error < 0.05 * scale
    # a crowd grouped by bin gives each character what it gets alone
    crowd = network.predict(np.repeat(x, 37, 0), between, mode="linear")
    alone = np.concatenate([network.predict(x, between[i:i + 1], mode="linear") for i in range(37)])
    np.testing.assert_allclose(crowd, alone, rtol=1e-5, atol=1e-5)


def test_each_network_owns_its_model(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    before = {k: v.clone() for k, v in checkpoint.model.state_dict().items()}
    network = PFNNModel(checkpoint, device="cpu", backend="torch")
    network.set_beta(3.0)
    with torch.no_grad():
        network.model.layers[0].weight.mul_(2.0)
    assert network.model is not checkpoint.model and checkpoint.model.beta == checkpoint.config.beta
    for name, value in checkpoint.model.state_dict().items():
        assert torch.equal(value, before[name])
    other = PFNNModel(checkpoint, device="cpu", backend="torch")
    assert other.beta == checkpoint.config.beta and not torch.equal(other.model.layers[0].weight,
                                                                    network.model.layers[0].weight)


def test_style_weights_reach_every_layer(walk_motion, tmp_path):
    from tests.conftest import make_random_checkpoint

    path = make_random_checkpoint(walk_motion, tmp_path / "plain.safetensors")
    plain = load_checkpoint(path)
    config = ModelConfig(**{**plain.config.to_dict(), "num_styles": 3})
    torch.manual_seed(1)
    model = PFNN(config)
    with torch.no_grad():
        for layer in model.layers:
            layer.weight.normal_(0.0, 0.3)
    styled = save_checkpoint(tmp_path / "styled.safetensors", model, plain.layout, plain.norm, plain.meta)
    checkpoint = load_checkpoint(styled)
    network = PFNNModel(checkpoint, device="cpu", backend="numpy")
    x, phase = _inputs(network, 2)
    style = np.array([[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    expected = _torch_reference(checkpoint, x, phase, style)
    got = network.predict(x, phase, style)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    assert np.abs(network.predict(x, phase, style[::-1]) - got).max() > 1e-3  # the style matters
    np.testing.assert_allclose(network.predict(x[:1], phase[:1]), network.predict(x[:1], phase[:1], style[:1]))


def test_floor_heights_come_from_the_checkpoint_and_bad_ones_are_named(walk_motion, tmp_path):
    from tests.conftest import make_random_checkpoint

    good = make_random_checkpoint(walk_motion, tmp_path / "floor.safetensors",
                                  extra_meta={"floor_heights": [0.11, 0.04, 0.12, 0.05]})
    np.testing.assert_allclose(PFNNModel(load_checkpoint(good), device="cpu").floor_heights, [0.11, 0.04, 0.12, 0.05])
    bad = make_random_checkpoint(walk_motion, tmp_path / "bad.safetensors", extra_meta={"floor_heights": [0.1, 0.2]})
    with pytest.raises(ValueError, match="floor_heights"):
        PFNNModel(load_checkpoint(bad), device="cpu")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_and_cpu_networks_agree(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    cpu = PFNNModel(checkpoint, device="cpu", backend="numpy")
    cuda = PFNNModel(checkpoint, device="cuda", backend="torch")
    for batch in (1, 7, 64):
        x, phase = _inputs(cpu, batch, seed=batch)
        expected = cpu.predict(x, phase)
        for _ in range(2):  # the second call replays the captured graph
            np.testing.assert_allclose(cuda.predict(x, phase), expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    cuda.set_beta(5.0)
    cpu.set_beta(5.0)
    x, phase = _inputs(cpu, 7)
    np.testing.assert_allclose(cuda.predict(x, phase), cpu.predict(x, phase), rtol=1e-4, atol=1e-4)


def test_stride_lengths_follow_each_styles_statistics(walk_motion, tmp_path):
    from tests.conftest import make_random_checkpoint

    strides = {"short": {"speed": [0.5, 1.5], "stride_length": [0.6, 1.0]},
               "long": {"speed": [1.0, 2.0], "stride_length": [1.4, 1.8]}}
    meta = {"styles": {"names": ["short", "long", "bare"],
                       "stats": {name: {"stride": stride} for name, stride in strides.items()}},
            "stride": {"speed": [1.0], "stride_length": [1.2]}}
    path = make_random_checkpoint(walk_motion, tmp_path / "strides.safetensors", extra_meta=meta)
    checkpoint = load_checkpoint(path)
    config = ModelConfig(**{**checkpoint.config.to_dict(), "num_styles": 3})
    styled = save_checkpoint(tmp_path / "styled.safetensors", PFNN(config), checkpoint.layout, checkpoint.norm,
                             checkpoint.meta)
    network = PFNNModel(load_checkpoint(styled), device="cpu")
    speed = np.array([1.0, 1.0, 1.0, 1.0, 3.0])
    style = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.5, 0], [0, 1, 0]], float)
    # 'short' at 1.0 m/s: 0.8 m; 'long': 1.4 m; 'bare' (no statistics): the pooled 1.2 m; a half blend
    # 1.1 m; beyond the data the longest stride is held
    np.testing.assert_allclose(network.stride_length(speed, style), [0.8, 1.4, 1.2, 1.1, 1.8], atol=2e-3)
