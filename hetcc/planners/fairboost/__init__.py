"""fairboost: FairBoost's multi-DNN manager (Eq. 2 layer vectors, a VQ-VAE, a Rainbow-DQN agent).

``features`` reads the layer vectors off a problem; ``vqvae`` encodes them; ``env`` is the
gymnasium environment over a mix; ``agent`` the Rainbow-DQN on TorchRL; ``train`` its training
loop. This module stays light (options and the spec only): torch, TorchRL and gymnasium load when
the planner runs.
"""
