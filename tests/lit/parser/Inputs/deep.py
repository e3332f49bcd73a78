"""Writes a SIR input nested `n` deep to stdout (for the lit tests of the nesting limits, docs/errors.md).

    python deep.py KIND N     KIND: terms, unary, loops, fors, attrs, constant
"""

import sys


def kernel(expr: str) -> str:
    return ("solar.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %y = solar.kernel @k(%x as X) -> (Y: tensor<4xf32>) {\n"
            f"    affine.for %i = 0 to 4 {{\n      Y[%i] = {expr}\n    }}\n  }}\n  solar.return %y\n}}\n")


def main(kind: str, n: int) -> str:
    if kind == "terms":
        return kernel(" + ".join(["X[%i]"] * n))
    if kind == "unary":
        return kernel("-" * n + "X[%i]")
    if kind == "loops":
        body = "".join(f"affine.for %i{k} = 0 to 1 {{\n" for k in range(n)) + "Y[0] = X[0] + X[1]\n" + "}\n" * n
        # Y has the one element the nest writes: a program that leaves part of its output unwritten has no bound.
        return ("solar.func @f(%x: tensor<4xf32>) -> tensor<1xf32> {\n"
                f"  %y = solar.kernel @k(%x as X) -> (Y: tensor<1xf32>) {{\n{body}  }}\n  solar.return %y\n}}\n")
    if kind == "fors":
        head = "".join(f"%r{k} = solar.for %t{k} = 0 to 2 iter_args(%h{k} = {'%h' + str(k - 1) if k else '%x'}) "
                       "-> (tensor<4xf32>) {\n" for k in range(n))
        body = (f"%z = solar.kernel @k(%h{n - 1} as H) -> (Y: tensor<4xf32>) {{\n"
                "affine.for %i = 0 to 4 {\nY[%i] = H[%i] * 2.0\n}\n}\nsolar.yield %z\n")
        tail = "".join(f"}}\nsolar.yield %r{k}\n" for k in range(n - 1, 0, -1)) + "}\n"
        return f"solar.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {{\n{head}{body}{tail}solar.return %r0\n}}\n"
    if kind == "attrs":
        return ("solar.module attributes {a = " + "[" * n + "]" * n + "} {\n"
                "solar.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\nsolar.return %x\n}\n}\n")
    if kind == "constant":
        return ("solar.func @f() -> tensor<1xf32> {\n%c = solar.constant " + "[" * n + "1.0" + "]" * n
                + " : tensor<1xf32>\nsolar.return %c\n}\n")
    raise SystemExit(f"unknown kind {kind}")


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1], int(sys.argv[2])))
