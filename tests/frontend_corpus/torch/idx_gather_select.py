"""torch.gather along dims 1 and 0, index_select, take_along_dim."""
import torch

R, C, K = 5, 9, 4


class Model(torch.nn.Module):
    def forward(self, x, i1, i0, sel, ta):
        return (torch.gather(x, 1, i1), torch.gather(x, 0, i0), torch.index_select(x, 1, sel),
                torch.take_along_dim(x, ta, dim=1))


def get_inputs():
    return [torch.randn(R, C), torch.randint(0, C, (R, K)), torch.randint(0, R, (2, C)), torch.tensor([8, 0, 3]),
            torch.randint(0, C, (R, 2))]


def get_init_inputs():
    return []


# Elementwise gathers compute a flat position per index element: I·stride_d + Σ p_k·stride_k
# (dim 1: I + 9·p; dim 0: 9·I + p: 2 ops each); index_select is a plain solar.gather.
EXPECT = {"vector": 2 * R * K + 2 * 2 * C + 2 * R * 2}
