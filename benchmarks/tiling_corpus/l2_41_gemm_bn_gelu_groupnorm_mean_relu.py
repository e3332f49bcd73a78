"""A linear layer, batch norm, GELU, group norm, a mean over features and a ReLU (the pattern and sizes of
KernelBench L2 41)."""
import torch

batch_size, in_features, out_features, num_groups = 16384, 4096, 4096, 8


class Model(torch.nn.Module):
    def __init__(self, in_features, out_features, num_groups):
        super().__init__()
        self.gemm = torch.nn.Linear(in_features, out_features)
        self.batch_norm = torch.nn.BatchNorm1d(out_features)
        self.group_norm = torch.nn.GroupNorm(num_groups, out_features)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.batch_norm(self.gemm(x)))
        x = torch.mean(self.group_norm(x), dim=1, keepdim=True)
        return torch.relu(x)


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, num_groups]
