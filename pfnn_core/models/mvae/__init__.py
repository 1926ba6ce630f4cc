"""The motion VAE: a learned motion manifold (encoder, mixture-of-experts decoder) and a latent control policy."""
