"""triplet_margin_loss (with swap), cosine_similarity, pairwise_distance, cosine_embedding_loss."""
import torch
import torch.nn.functional as F

B, D = 5, 12


class Model(torch.nn.Module):
    def forward(self, a, p, n, t):
        return (F.triplet_margin_loss(a, p, n, margin=0.7, swap=True), F.cosine_similarity(a, p, dim=1),
                F.pairwise_distance(a, n), F.cosine_embedding_loss(a, p, t))


def get_inputs():
    return [torch.randn(B, D), torch.randn(B, D), torch.randn(B, D), torch.randint(0, 2, (B,)).float() * 2 - 1]


def get_init_inputs():
    return []

N = B * D
# triplet: three distances Σ (x − y + eps)² (the difference is formed twice: 6 per element each), per row
# 3 sqrt, min, sub, add, max, add (8), a divide. cosine_similarity: x·y, x·x, y·y summed are contractions
# (2 tensor-core FLOPs each per element), per row 4. pairwise_distance 6 per element, a sqrt per row.
# cosine_embedding: contractions as above, 18 per row, a divide.
EXPECT = {"tensor": 2 * 3 * N * 2, "vector": 3 * 6 * N + 8 * B + 1 + 4 * B + 6 * N + B + 18 * B + 1}
