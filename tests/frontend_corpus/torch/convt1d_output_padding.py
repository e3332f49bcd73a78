"""ConvTranspose1d with stride 3, padding 1, output padding 2 and dilation 2."""
import torch

N, CIN, COUT, L, K, S, P, OP, DIL = 2, 4, 6, 7, 3, 3, 1, 2, 2


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.ConvTranspose1d(CIN, COUT, K, stride=S, padding=P, output_padding=OP, dilation=DIL)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(N, CIN, L)]


def get_init_inputs():
    return []


LOUT = (L - 1) * S - 2 * P + DIL * (K - 1) + OP + 1
# Scatter form: input position p and tap r land at p·S + r·DIL − P, counted where that is inside the output.
TAPS = sum(1 for p in range(L) for r in range(K) if 0 <= p * S + r * DIL - P < LOUT)
EXPECT = {"tensor": 2 * N * CIN * COUT * TAPS, "vector": N * COUT * LOUT}
