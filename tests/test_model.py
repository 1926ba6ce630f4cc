"""PFNN model: phase functions (seam continuity, normalisation, control points), output blending equals
weight-matrix blending, live beta, numpy runner equals torch."""
import numpy as np
import pytest
import torch

from pfnn_core.models.pfnn.model import (
    PFNN,
    ModelConfig,
    PhaseFunctionedLinear,
    cubic_phase_weights,
    cyclic_distance,
    phase_weights,
    rbf_phase_weights,
)
from pfnn_core.models.pfnn.network import FoldedPFNN


def reference_blended_weights_forward(layer: PhaseFunctionedLinear, x, blend):
    """The slow tutorial way: a per-sample weight matrix sum_k w_k W_k, then x @ W."""
    weight = torch.einsum("bk,kij->bij", blend, layer.weight)
    bias = blend @ layer.bias
    return torch.einsum("bi,bij->bj", x, weight) + bias


def pfnn_demo_cubic(phase: float) -> np.ndarray:
    """PFNN demo code's cubic(y0, y1, y2, y3, mu) over the 4 neighbouring control points, as weights."""
    scaled = 4.0 * phase
    mu = scaled % 1.0
    i1 = int(scaled) % 4
    weights = np.zeros(4)
    weights[(i1 - 1) % 4] += -0.5 * mu + mu**2 - 0.5 * mu**3
    weights[i1] += 1.0 - 2.5 * mu**2 + 1.5 * mu**3
    weights[(i1 + 1) % 4] += 0.5 * mu + 2.0 * mu**2 - 1.5 * mu**3
    weights[(i1 + 2) % 4] += -0.5 * mu**2 + 0.5 * mu**3
    return weights


@pytest.mark.parametrize("form", ["rbf", "cubic"])
def test_phase_weights_are_continuous_across_the_seam(form):
    eps = 1e-6
    before = phase_weights(np.array([1.0 - eps]), form)
    after = phase_weights(np.array([eps]), form)
    at_zero = phase_weights(np.array([0.0]), form)
    assert np.abs(before - after).max() < 1e-4
    assert np.abs(before - at_zero).max() < 1e-4
    # a dense sweep around the circle has no jump anywhere
    sweep = phase_weights(np.linspace(0.0, 1.0, 4001), form)
    assert np.abs(np.diff(sweep, axis=0)).max() < 0.01


def test_non_cyclic_rbf_would_jump_at_the_seam():
    """Guards the trap: the (p - c)^2 form differs a lot at 1-eps vs 0+eps; ours does not."""
    centres = np.arange(8) / 8

    def naive(p):
        w = np.exp(-8.0 * (p - centres) ** 2)
        return w / w.sum()

    assert np.abs(naive(1 - 1e-6) - naive(1e-6)).max() > 0.1
    assert np.abs(rbf_phase_weights(np.array(1 - 1e-6)) - rbf_phase_weights(np.array(1e-6))).max() < 1e-4


def test_cyclic_distance_by_hand():
    d = cyclic_distance(np.array([0.05, 0.95, 0.5]), np.array([0.0, 0.9]))
    np.testing.assert_allclose(d, [[0.05, 0.15], [0.05, 0.05], [0.5, 0.4]], atol=1e-12)


def test_rbf_weights_sum_to_one_and_change_with_beta():
    phase = np.random.default_rng(0).random(100)
    narrow = rbf_phase_weights(phase, 8, 16.0)
    wide = rbf_phase_weights(phase, 8, 2.0)
    np.testing.assert_allclose(narrow.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(wide.sum(-1), 1.0, atol=1e-12)
    assert np.abs(narrow - wide).max() > 0.05
    assert narrow.max(-1).mean() > wide.max(-1).mean()  # larger beta concentrates the weight
    # hand value: p = 0, K = 2 -> centres 0 and 0.5: exp(0) vs exp(-beta / 4)
    np.testing.assert_allclose(rbf_phase_weights(np.array([0.0]), 2, 4.0),
                               [[1 / (1 + np.exp(-1.0)), np.exp(-1.0) / (1 + np.exp(-1.0))]])


def test_rbf_numpy_and_torch_agree():
    phase = np.random.default_rng(1).random(50)
    np.testing.assert_allclose(rbf_phase_weights(torch.tensor(phase), 8, 8.0).numpy(),
                               rbf_phase_weights(phase, 8, 8.0), atol=1e-12)


def test_cubic_weights_sum_to_one_hit_control_sets_and_match_pfnn_formula():
    phase = np.random.default_rng(2).random(500)
    weights = cubic_phase_weights(phase)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(cubic_phase_weights(np.arange(4) / 4), np.eye(4), atol=1e-12)
    expected = np.stack([pfnn_demo_cubic(p) for p in phase])
    np.testing.assert_allclose(weights, expected, atol=1e-12)
    np.testing.assert_allclose(cubic_phase_weights(torch.tensor(phase)).numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("form", ["rbf", "cubic"])
def test_blending_outputs_equals_blending_weight_matrices(form):
    torch.manual_seed(0)
    config = ModelConfig(input_size=13, output_size=7, hidden_size=16, phase_function=form)
    layer = PhaseFunctionedLinear(13, 7, config.kernel_count)
    with torch.no_grad():  # independent kernels, so the blend actually matters
        layer.weight.normal_()
        layer.bias.normal_()
    x = torch.randn(32, 13)
    blend = phase_weights(torch.rand(32), form)
    np.testing.assert_allclose(layer(x, blend).detach().numpy(),
                               reference_blended_weights_forward(layer, x, blend).detach().numpy(),
                               atol=1e-5)


def random_model(form="rbf", **overrides) -> PFNN:
    torch.manual_seed(3)
    config = ModelConfig(input_size=20, output_size=11, hidden_size=24, phase_function=form, **overrides)
    model = PFNN(config)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    return model.eval()


def test_model_output_shape_and_untrained_model_ignores_phase():
    config = ModelConfig(input_size=20, output_size=11, hidden_size=24)
    model = PFNN(config).eval()
    x = torch.randn(5, 20)
    out_a = model(x, torch.zeros(5))
    out_b = model(x, torch.full((5,), 0.37))
    assert out_a.shape == (5, 11)
    torch.testing.assert_close(out_a, out_b)


def test_beta_change_takes_effect_on_next_forward():
    model = random_model("rbf")
    x, phase = torch.randn(4, 20), torch.tensor([0.1, 0.3, 0.55, 0.9])
    before = model(x, phase)
    model.beta = 2.0
    after = model(x, phase)
    assert (before - after).abs().max() > 1e-3
    model.beta = 8.0
    torch.testing.assert_close(model(x, phase), before)


def test_dropout_only_in_training_mode():
    model = random_model("rbf", dropout=0.5)
    x, phase = torch.randn(8, 20), torch.rand(8)
    torch.testing.assert_close(model(x, phase), model(x, phase))
    model.train()
    assert (model(x, phase) - model(x, phase)).abs().max() > 1e-4



def numpy_runner(model):
    """The runtime's CPU copy of `model` (`pfnn_network.FoldedPFNN`) with an identity normalisation."""
    config = model.config
    norm = {"x_mean": torch.zeros(config.input_size), "x_std": torch.ones(config.input_size),
            "y_mean": torch.zeros(config.output_size), "y_std": torch.ones(config.output_size)}
    return FoldedPFNN(model, norm, np.zeros(config.input_size, bool))


@pytest.mark.parametrize("form", ["rbf", "cubic"])
@pytest.mark.parametrize("batch", [1, 9])
def test_numpy_runner_matches_torch(form, batch):
    model = random_model(form)
    model.beta = 5.0
    runner = numpy_runner(model)
    assert runner.beta == 5.0
    x = torch.randn(batch, 20)
    phase = torch.rand(batch)
    expected = model(x, phase).detach().numpy()
    np.testing.assert_allclose(runner(x.numpy(), phase.numpy()), expected, atol=1e-5)
    runner.beta = 3.0
    model.beta = 3.0
    np.testing.assert_allclose(runner(x.numpy(), phase.numpy()), model(x, phase).detach().numpy(), atol=1e-5)


def test_config_round_trip_and_validation():
    config = ModelConfig(input_size=3, output_size=4, phase_function="cubic", beta=3.5)
    assert ModelConfig.from_dict(config.to_dict()) == config
    assert config.kernel_count == 4
    with pytest.raises(ValueError, match="phase_function"):
        ModelConfig(input_size=3, output_size=4, phase_function="linear")
    with pytest.raises(ValueError, match="unknown"):
        ModelConfig.from_dict({**config.to_dict(), "colour": 1})


def test_style_weights_enter_every_layer_and_blend_linearly_in_the_first():
    torch.manual_seed(0)
    model = PFNN(ModelConfig(10, 5, hidden_size=16, num_styles=3, dropout=0.0)).eval()
    assert [n_in for n_in, _ in model.config.layer_sizes()] == [13, 19, 19]
    with torch.no_grad():
        for layer in model.layers:  # give each style its own weights so a style changes the output
            layer.weight.normal_()
    x, phase = torch.randn(2, 10), torch.tensor([0.1, 0.6])
    one, two = torch.eye(3)[[0, 0]], torch.eye(3)[[1, 1]]
    with torch.no_grad():
        assert not torch.allclose(model(x, phase, one), model(x, phase, two))
        # The first layer is affine in the style: its pre-activation for a 50/50 blend is the mean.
        blend = model.phase_weights(phase)
        first = lambda style: model.layers[0](torch.cat([x, style], -1), blend)
        assert torch.allclose(first(0.5 * one + 0.5 * two), 0.5 * first(one) + 0.5 * first(two), atol=1e-5)
        runner = numpy_runner(model)
        assert np.allclose(runner(x.numpy(), phase.numpy(), two.numpy()), model(x, phase, two).numpy(), atol=1e-5)


def test_a_style_model_refuses_missing_or_mis_sized_style_weights():
    model = PFNN(ModelConfig(10, 5, hidden_size=8, num_styles=3)).eval()
    x, phase = torch.randn(2, 10), torch.rand(2)
    with pytest.raises(ValueError, match="conditioned on 3 styles"):
        model(x, phase)
    with pytest.raises(ValueError, match=r"expected \(2, 3\)"):
        model(x, phase, torch.ones(2, 4) / 4)
    assert model(x, phase, torch.tensor([0.0, 1.0, 0.0])).shape == (2, 5)  # one style for the batch
    plain = PFNN(ModelConfig(10, 5, hidden_size=8)).eval()
    assert ModelConfig.from_dict({k: v for k, v in plain.config.to_dict().items() if k != "num_styles"}) == plain.config
