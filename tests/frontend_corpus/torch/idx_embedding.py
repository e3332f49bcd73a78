"""nn.Embedding (padding_idx) followed by a mean over the sequence, and F.one_hot."""
import torch

B, S, V, D = 3, 7, 20, 8


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(V, D, padding_idx=0)

    def forward(self, ids):
        return self.emb(ids).mean(dim=1), torch.nn.functional.one_hot(ids, V)


def get_inputs():
    return [torch.randint(0, V, (B, S))]


def get_init_inputs():
    return []


# The lookup is a solar.gather (no arithmetic); the mean adds per element and divides per output; one_hot
# compares and selects per element of the (B, S, V) result.
EXPECT = {"vector": B * S * D + B * D + 2 * B * S * V}
