"""A bidirectional GRU (sequence-first) and an Elman RNN with ReLU."""
import torch

T, B, IN, HID = 4, 2, 5, 6


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = torch.nn.GRU(IN, HID, bidirectional=True)
        self.rnn = torch.nn.RNN(IN, HID, nonlinearity="relu")

    def forward(self, x, h0):
        y, h = self.gru(x, h0)
        z, hz = self.rnn(x)
        return y, h, z, hz


def get_inputs():
    return [torch.randn(T, B, IN), torch.randn(2, B, HID)]


def get_init_inputs():
    return []


EXPECT = {"tensor": 2 * T * 2 * B * 3 * HID * (IN + HID) + T * 2 * B * HID * (IN + HID)}
