import { formatMoney } from "./money.js";
import EventEmitter from "events";

const TAX_RATE = 0.2;

/**
 * A shopping cart that emits "change" when its lines change.
 */
export class Cart extends EventEmitter {
  constructor(currency = "EUR") {
    super();
    this.currency = currency;
    this.lines = new Map();
  }

  add(sku, price, quantity = 1) {
    const line = this.lines.get(sku) ?? { price, quantity: 0 };
    line.quantity += quantity;
    this.lines.set(sku, line);
    this.emit("change", this);
  }

  get total() {
    let sum = 0;
    for (const { price, quantity } of this.lines.values()) sum += price * quantity;
    return sum * (1 + TAX_RATE);
  }

  static fromJSON(data) {
    const cart = new Cart(data.currency);
    data.lines.forEach((l) => cart.add(l.sku, l.price, l.quantity));
    return cart;
  }
}

// Renders one line of the receipt.
export const renderLine = (line, currency) => {
  const helper = (n) => n.toFixed(2);
  return `${line.quantity} x ${formatMoney(line.price, currency)} ${helper(1)}`;
};

function* lineItems(cart) {
  for (const entry of cart.lines) yield entry;
}

export default function checkout(cart) {
  return { total: cart.total, items: [...lineItems(cart)] };
}
