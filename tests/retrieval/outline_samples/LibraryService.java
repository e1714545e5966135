package com.example.library;

import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Lends books to members and tracks what is overdue.
 */
public class LibraryService {
    private static final int LOAN_DAYS = 21;
    private final List<Loan> loans = new ArrayList<>();

    public record Loan(String isbn, String memberId, LocalDate due) {
        boolean overdue(LocalDate today) {
            return today.isAfter(due);
        }
    }

    public enum Status { AVAILABLE, ON_LOAN, LOST }

    public interface Notifier {
        void overdue(Loan loan);
    }

    public LibraryService() {
    }

    /** Lends a book; returns the loan. */
    public Loan lend(String isbn, String memberId, LocalDate today) {
        Loan loan = new Loan(isbn, memberId, today.plusDays(LOAN_DAYS));
        loans.add(loan);
        return loan;
    }

    public Optional<Loan> find(String isbn) {
        return loans.stream().filter(l -> l.isbn().equals(isbn)).findFirst();
    }

    @Deprecated
    public void notifyOverdue(Notifier notifier, LocalDate today) {
        for (Loan loan : loans) {
            if (loan.overdue(today)) {
                notifier.overdue(loan);
            }
        }
    }
}
