"""KernelBench L3 49: Mamba2's SSD forward returning the final state (batch 2048, 128 tokens, 8 heads of 64,
state 16, chunks of 64), f32. The diagonal-block output is computed and dropped, as in the original."""
import torch
import torch.nn.functional as F


def segment_sum(x: torch.Tensor) -> torch.Tensor:
    """out[..., i, j] = sum of x[..., j+1 .. i] for j <= i, -inf above the diagonal."""
    n = x.shape[-1]
    running = torch.cumsum(x, dim=-1)
    pairwise = running[..., :, None] - running[..., None, :]
    keep = torch.tril(torch.ones(n, n, dtype=torch.bool, device=x.device))
    return pairwise.masked_fill(~keep, float("-inf"))


class SSD(torch.nn.Module):
    def __init__(self, batch: int, length: int, heads: int, d_head: int, d_state: int, block_len: int = 64) -> None:
        super().__init__()
        assert length % block_len == 0
        self.block_len = block_len
        self.A = torch.nn.Parameter(torch.randn(batch, length, heads))
        self.B = torch.nn.Parameter(torch.randn(batch, length, heads, d_state))
        self.C = torch.nn.Parameter(torch.randn(batch, length, heads, d_state))

    def chunk(self, t: torch.Tensor) -> torch.Tensor:
        """(b, c*l, ...) -> (b, c, l, ...)"""
        return t.reshape(t.shape[0], t.shape[1] // self.block_len, self.block_len, *t.shape[2:])

    def states(self, X: torch.Tensor) -> tuple:
        x, a, b, c = (self.chunk(t) for t in (X, self.A, self.B, self.C))
        a = a.permute(0, 3, 1, 2)  # b h c l
        a_cum = torch.cumsum(a, dim=-1)
        decay_in = torch.exp(segment_sum(a))
        y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", c, b, decay_in, x)
        decay_to_end = torch.exp(a_cum[:, :, :, -1:] - a_cum)
        chunk_states = torch.einsum("bclhn,bhcl,bclhp->bchpn", b, decay_to_end, x)
        start = torch.zeros_like(chunk_states[:, :1])
        chunk_states = torch.cat([start, chunk_states], dim=1)
        decay_between = torch.exp(segment_sum(F.pad(a_cum[:, :, :, -1], (1, 0))))
        carried = torch.einsum("bhzc,bchpn->bzhpn", decay_between, chunk_states)
        return c, a_cum, y_diag, carried

batch_size = 2048
seq_length = 128
n_heads = 8
d_head = 64
d_state = 16
block_len = 64


class Model(SSD):
    def forward(self, X: torch.Tensor) -> torch.Tensor:
        _c, _a_cum, _y_diag, carried = self.states(X)
        return carried[:, -1]


def get_inputs():
    return [torch.rand(batch_size, seq_length, n_heads, d_head)]


def get_init_inputs():
    return [batch_size, seq_length, n_heads, d_head, d_state, block_len]
