"""2-D max pooling, kernel 4, stride 1, padding 1, dilation 1, on 32 x 64 x 512 x 512."""
import torch

batch_size, channels, height, width = 32, 64, 512, 512
kernel_size, stride, padding, dilation = 4, 1, 1, 1


class Model(torch.nn.Module):
    def __init__(self, kernel_size, stride, padding, dilation):
        super().__init__()
        self.pool = torch.nn.MaxPool2d(kernel_size, stride, padding, dilation)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]
