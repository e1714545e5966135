using System;
using System.Collections.Generic;
using System.Threading.Tasks;

namespace Shop.Orders
{
    /// <summary>Validates and submits orders.</summary>
    public class OrderProcessor
    {
        private readonly IPaymentGateway _payments;

        public OrderProcessor(IPaymentGateway payments)
        {
            _payments = payments;
        }

        public int Retries { get; set; } = 3;

        /// <summary>Charges the order's total; retries transient failures.</summary>
        public async Task<bool> SubmitAsync(Order order)
        {
            for (var attempt = 0; attempt < Retries; attempt++)
            {
                if (await _payments.ChargeAsync(order.Total))
                    return true;
            }
            return false;
        }

        private static void Validate(Order order)
        {
            if (order.Lines.Count == 0) throw new ArgumentException("empty order");
        }
    }

    public interface IPaymentGateway
    {
        Task<bool> ChargeAsync(decimal amount);
    }

    public record Order(List<string> Lines, decimal Total);

    public enum OrderState { New, Paid, Shipped }

    public struct Money
    {
        public decimal Amount;
        public string Currency;
    }
}
