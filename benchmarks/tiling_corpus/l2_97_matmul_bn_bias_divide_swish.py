"""A linear layer, batch norm, a bias, a division and a swish (the pattern and sizes of KernelBench L2 97)."""
import torch

batch_size, in_features, out_features = 16384, 4096, 4096


class Model(torch.nn.Module):
    def __init__(self, in_features, out_features, bias_shape=(1,), divide_value=1.0):
        super().__init__()
        self.matmul = torch.nn.Linear(in_features, out_features)
        self.bn = torch.nn.BatchNorm1d(out_features)
        self.bias = torch.nn.Parameter(torch.randn(bias_shape))
        self.divide_value = divide_value

    def forward(self, x):
        x = (self.bn(self.matmul(x)) + self.bias) / self.divide_value
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
