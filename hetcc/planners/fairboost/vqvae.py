"""FairBoost's VQ-VAE (its Sec. 4.2 and 5.1): 22 numbers of a layer -> one of K latent codes of 8.

The encoder reads a layer vector (Eq. 2, ``features.scaled``) as a 1-D signal of 22 positions
and one channel: a 1-D convolution that extracts the high-level features, a block of 9 residual
1-D convolution layers for the lower-level ones (the paper's), and a convolution over all 22
positions to the latent of 8 (the paper's latent size: 4 lost information, 16 added cost for
nothing, its Fig. 6). The latent is quantised to the nearest of ``codes`` codebook vectors (VQ-VAE,
van den Oord et al. 2017: straight-through gradient, codebook and commitment losses, beta 0.25);
the decoder mirrors the encoder and the loss is the reconstruction's MSE (the paper's criterion).
Codes unused over a stretch of training are restarted at random encoder outputs, which keeps the
codebook's perplexity up on ~1,100 layers. The paper does not give the channels or the codebook
size: 32 channels and 64 codes here, which reconstruct the zoo's layers to a test MSE of a few
1e-4 in under a minute on one core (the shipped weights' numbers are in ``data/fairboost.json``).

``train_vqvae(vectors, seed)`` trains one and returns its state (a dict of tensors and numbers,
what ``torch.save`` writes); ``Codec`` loads a state and maps layer vectors to their codes.
torch is imported inside the functions (``hetcc.planners`` stays light).
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from .features import WIDTH, scaled

LATENT = 8          #: the paper's latent size
CHANNELS = 32       #: convolution channels (the paper does not give them)
RESIDUAL = 9        #: residual 1-D convolution layers (the paper's block of 9)
CODES = 64          #: codebook size (the paper does not give it)
COMMITMENT = 0.25   #: VQ-VAE's beta

#: the paper's 18 DNNs (Sec. 5.1) -> the zoo model that stands for it (None: the zoo lacks it)
PAPER_DNNS = {
    "AlexNet": None, "GoogleNet": "googlenet", "Inception-ResNet V2": None, "Inception V3": "inception_v3",
    "Inception V4": "inception_v4", "LeNet": None, "MobileNet": None, "MobileNet V2": "mobilenet_v2",
    "ResNet-12": None, "ResNet-50": "resnet50", "ResNet-50 V2": None, "ResNeXt-50": None,
    "ShuffleNet": "shufflenet_v2_x1_0",    # ShuffleNet V2 stands in for the paper's ShuffleNet
    "SqueezeNet": "squeezenet1_1", "SSD (MobileNet)": None, "YOLO V3": None, "VGG-16": "vgg16", "VGG-19": None,
}


@functools.lru_cache(maxsize=None)
def _modules() -> Any:
    """The torch modules (defined here so that torch loads only when a VQ-VAE is built)."""
    import torch
    from torch import nn

    class Residual(nn.Module):
        def __init__(self, ch: int) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.ReLU(), nn.Conv1d(ch, ch, 3, padding=1), nn.ReLU(), nn.Conv1d(ch, ch, 1))

        def forward(self, x):
            return x + self.body(x)

    class Encoder(nn.Module):
        def __init__(self, ch: int = CHANNELS, latent: int = LATENT, residual: int = RESIDUAL) -> None:
            super().__init__()
            self.net = nn.Sequential(nn.Conv1d(1, ch, 3, padding=1), *[Residual(ch) for _ in range(residual)],
                                     nn.ReLU(), nn.Conv1d(ch, latent, WIDTH))

        def forward(self, x):                       # [B, 22] -> [B, latent]
            return self.net(x.unsqueeze(1)).squeeze(-1)

    class Decoder(nn.Module):
        def __init__(self, ch: int = CHANNELS, latent: int = LATENT, residual: int = 2) -> None:
            super().__init__()
            self.ch = ch
            self.up = nn.Linear(latent, ch * WIDTH)
            self.net = nn.Sequential(*[Residual(ch) for _ in range(residual)], nn.ReLU(), nn.Conv1d(ch, 1, 3, padding=1))

        def forward(self, z):                       # [B, latent] -> [B, 22]
            return self.net(self.up(z).view(-1, self.ch, WIDTH)).squeeze(1)

    def quantise(z, codebook):
        """(indices [B], quantised [B, latent]) of the nearest codebook rows."""
        idx = torch.cdist(z, codebook).argmin(dim=1)
        return idx, codebook[idx]

    return torch, Encoder, Decoder, quantise


@dataclass(frozen=True)
class VQVAEResult:
    state: dict                 # what torch.save writes: weights, codebook, config, metrics
    train_mse: float
    test_mse: float
    perplexity: float           # exp(entropy) of the codes the test layers use
    used_codes: int
    seconds: float


def train_vqvae(vectors: np.ndarray, *, seed: int = 0, steps: int = 1500, batch: int = 64, lr: float = 1e-3,
                codes: int = CODES, channels: int = CHANNELS, test_share: float = 0.1,
                progress: Callable[[int, float], None] | None = None, meta: Mapping[str, Any] | None = None
                ) -> VQVAEResult:
    """Train the VQ-VAE on ``vectors`` ([n, 22] Eq. 2 rows, raw) with ``seed``: a ``test_share``
    of the rows held out (the paper's 0.9 split), Adam, MSE reconstruction. ``progress(step,
    loss)`` is called every 50 steps; ``meta`` goes into the state as is (what it was trained on)."""
    torch, Encoder, Decoder, quantise = _modules()
    x_all = scaled(vectors)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x_all))
    n_test = max(1, int(round(test_share * len(x_all)))) if len(x_all) > 10 else 0
    test, train = x_all[order[:n_test]], x_all[order[n_test:]]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    t0 = time.perf_counter()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            enc, dec = Encoder(channels), Decoder(channels)
            xt = torch.as_tensor(train)
            with torch.no_grad():   # the codebook starts at encoder outputs of random layers
                z0 = enc(xt[torch.as_tensor(rng.choice(len(xt), size=codes, replace=len(xt) < codes))])
            codebook = torch.nn.Parameter(z0.clone() + 1e-3 * torch.randn_like(z0))
            opt = torch.optim.Adam([*enc.parameters(), *dec.parameters(), codebook], lr=lr)
            usage = torch.zeros(codes)
            for step in range(1, steps + 1):
                xb = xt[torch.as_tensor(rng.integers(0, len(xt), size=min(batch, len(xt))))]
                z = enc(xb)
                idx, q = quantise(z, codebook)
                zq = z + (q - z).detach()              # straight-through
                recon = dec(zq)
                rec = torch.mean((recon - xb) ** 2)
                loss = rec + torch.mean((q - z.detach()) ** 2) + COMMITMENT * torch.mean((z - q.detach()) ** 2)
                opt.zero_grad()
                loss.backward()
                opt.step()
                usage += torch.bincount(idx, minlength=codes).float()
                if step % 200 == 0 and step < 0.8 * steps:   # restart the codes nobody used
                    dead = torch.nonzero(usage == 0).flatten()
                    if dead.numel():
                        with torch.no_grad():
                            pick = torch.as_tensor(rng.integers(0, len(xt), size=int(dead.numel())))
                            codebook[dead] = enc(xt[pick]) + 1e-3 * torch.randn(int(dead.numel()), LATENT)
                    usage.zero_()
                if progress is not None and step % 50 == 0:
                    progress(step, float(rec))
            with torch.no_grad():
                def mse(a):
                    if len(a) == 0:
                        return float("nan")
                    t = torch.as_tensor(a)
                    return float(torch.mean((dec(quantise(enc(t), codebook)[1]) - t) ** 2))
                train_mse, test_mse = mse(train), mse(test)
                ref = test if len(test) else train
                used = quantise(enc(torch.as_tensor(ref)), codebook)[0]
                p = torch.bincount(used, minlength=codes).float()
                p = p / p.sum()
                perplexity = float(torch.exp(-(p[p > 0] * p[p > 0].log()).sum()))
                all_codes = quantise(enc(torch.as_tensor(x_all)), codebook)[1].numpy()
    finally:
        torch.set_num_threads(threads)
    state = {"format": "hetcc.fairboost.vqvae/1", "encoder": enc.state_dict(), "codebook": codebook.detach().clone(),
             "channels": channels, "codes": codes, "latent": LATENT, "seed": seed, "steps": steps,
             # the observation's [0, 1] scale of every code (Sec. 5.2: the state matrix in [0, 1])
             "code_lo": torch.as_tensor(all_codes.min(axis=0)), "code_hi": torch.as_tensor(all_codes.max(axis=0)),
             "train_mse": train_mse, "test_mse": test_mse, "perplexity": perplexity,
             "layers": int(len(x_all)), **dict(meta or {})}
    return VQVAEResult(state, train_mse, test_mse, perplexity, int((p > 0).sum()), time.perf_counter() - t0)


class Codec:
    """A trained encoder and codebook: ``codes(vectors)`` -> [n, 8] the layers' codebook vectors,
    scaled to [0, 1] by the codebook's range over the training layers."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        torch, Encoder, _, quantise = _modules()
        if state.get("format") != "hetcc.fairboost.vqvae/1":
            raise ValueError("not a FairBoost VQ-VAE state (format hetcc.fairboost.vqvae/1)")
        self._torch, self._quantise = torch, quantise
        self.encoder = Encoder(int(state["channels"]))
        self.encoder.load_state_dict(state["encoder"])
        self.encoder.eval()
        self.codebook = state["codebook"].detach().float()
        lo, hi = state["code_lo"].float(), state["code_hi"].float()
        self._lo, self._span = lo, torch.clamp(hi - lo, min=1e-6)

    def indices(self, vectors: np.ndarray) -> np.ndarray:
        """[n] the codebook index of each layer vector."""
        with self._torch.no_grad():
            z = self.encoder(self._torch.as_tensor(scaled(vectors)))
            return self._quantise(z, self.codebook)[0].numpy()

    def codes(self, vectors: np.ndarray) -> np.ndarray:
        """[n, 8] float32 in [0, 1]: each layer's codebook vector, scaled."""
        idx = self._torch.as_tensor(self.indices(vectors))
        q = (self.codebook[idx] - self._lo) / self._span
        return self._torch.clamp(q, 0.0, 1.0).numpy().astype(np.float32)


__all__ = ["CHANNELS", "CODES", "Codec", "LATENT", "PAPER_DNNS", "RESIDUAL", "VQVAEResult", "train_vqvae"]
