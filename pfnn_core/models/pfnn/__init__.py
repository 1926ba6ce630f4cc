"""The Phase-Functioned Neural Network: its layers and phase function (model.py) and the motion-model kind (network.py)."""
