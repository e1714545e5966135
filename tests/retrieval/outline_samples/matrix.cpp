#include <cstddef>
#include <stdexcept>
#include <vector>

namespace linalg {

// Dense row-major matrix of doubles.
class Matrix {
public:
    Matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), data_(rows * cols) {}

    double& at(std::size_t r, std::size_t c) { return data_[r * cols_ + c]; }
    double at(std::size_t r, std::size_t c) const { return data_[r * cols_ + c]; }

    Matrix operator*(const Matrix& other) const;

    static Matrix identity(std::size_t n) {
        Matrix m(n, n);
        for (std::size_t i = 0; i < n; ++i) m.at(i, i) = 1.0;
        return m;
    }

private:
    std::size_t rows_, cols_;
    std::vector<double> data_;
};

struct Shape {
    std::size_t rows;
    std::size_t cols;
};

// Multiplies two matrices; throws on a shape mismatch.
Matrix Matrix::operator*(const Matrix& other) const {
    if (cols_ != other.rows_) throw std::invalid_argument("shape mismatch");
    Matrix out(rows_, other.cols_);
    for (std::size_t i = 0; i < rows_; ++i)
        for (std::size_t j = 0; j < other.cols_; ++j)
            for (std::size_t k = 0; k < cols_; ++k)
                out.at(i, j) += at(i, k) * other.at(k, j);
    return out;
}

template <typename T>
T trace(const std::vector<std::vector<T>>& m) {
    T sum{};
    for (std::size_t i = 0; i < m.size(); ++i) sum += m[i][i];
    return sum;
}

}  // namespace linalg

int main() {
    auto m = linalg::Matrix::identity(3);
    return static_cast<int>(m.at(0, 0));
}
