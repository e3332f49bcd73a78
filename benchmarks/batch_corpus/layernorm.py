"""Layer normalization over the last three dims of a 16 x 64 x 256 x 256 tensor."""
import torch

batch_size, features, dim1, dim2 = 16, 64, 256, 256


class Model(torch.nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = torch.nn.LayerNorm(normalized_shape)

    def forward(self, x):
        return self.ln(x)


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [(features, dim1, dim2)]
