"""A linear layer, a per-feature scale and a batch norm, wider and shorter than L2 39 (the pattern and sizes
of KernelBench L2 33); translated in training mode, as it is built (batch statistics)."""
import torch

batch_size, in_features, out_features = 1024, 8192, 8192


class Model(torch.nn.Module):
    def __init__(self, in_features, out_features, scale_shape):
        super().__init__()
        self.gemm = torch.nn.Linear(in_features, out_features)
        self.scale = torch.nn.Parameter(torch.randn(scale_shape))
        self.bn = torch.nn.BatchNorm1d(out_features)

    def forward(self, x):
        return self.bn(self.gemm(x) * self.scale)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, (out_features,)]
