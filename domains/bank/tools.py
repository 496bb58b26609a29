"""Retail bank tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

PAYMENT_FEE = 0.5
REPLACEMENT_CARD_FEE = 5.0
MAX_PAYEES = 8
MAX_OPEN_ACCOUNTS = 4
DISPUTE_WINDOW_DAYS = 60
CARD_LIMIT_MIN = 100.0
CARD_LIMIT_MAX = {"standard": 2000.0, "premium": 5000.0, "business": 5000.0}
FEE_FREE_SEGMENTS = ["premium", "business"]


def verified_customer(customer_id):
    customer = db.get("customers", customer_id)
    db.ensure("identity_checks", {"customer_id": customer_id},
              "identity not verified: call verify_identity for this customer first")
    return customer


def active_customer(customer_id):
    customer = verified_customer(customer_id)
    if customer["status"] != "active":
        raise ToolError(f"customer {customer_id} is {customer['status']}; no changes are allowed")
    return customer


def owned_account(customer_id, account_id):
    account = db.owned("accounts", account_id, "customer_id", customer_id)
    return account


def open_account_of(customer_id, account_id):
    account = owned_account(customer_id, account_id)
    if account["status"] != "open":
        raise ToolError(f"account {account_id} is {account['status']}; only open accounts can move money")
    return account


def owned_card(customer_id, card_id):
    card = db.get("cards", card_id)
    owned_account(customer_id, card["account_id"])
    return card


def spent_today(account_id):
    today = clock.today()
    rows = db.find("transactions", {"account_id": account_id, "posted_on": today, "direction": "debit"})
    return sum(r["amount"] for r in rows if r["kind"] in ["transfer_out", "bill_payment", "loan_payment"])


def debit(account, amount, kind, counterparty, description):
    if amount <= 0:
        raise ToolError("the amount must be greater than zero")
    if round(account["balance"] - amount, 2) < -account["overdraft_limit"]:
        raise ToolError(f"insufficient funds in {account['account_id']}: balance {account['balance']:.2f}, "
                        f"overdraft limit {account['overdraft_limit']:.2f}")
    new_balance = round(account["balance"] - amount, 2)
    db.update("accounts", account["account_id"], {"balance": new_balance})
    txn = db.insert("transactions", {"account_id": account["account_id"], "posted_on": clock.today(),
                                     "amount": round(amount, 2), "direction": "debit", "kind": kind,
                                     "counterparty": counterparty, "description": description,
                                     "status": "posted"})
    return new_balance, txn


def credit(account, amount, kind, counterparty, description):
    new_balance = round(account["balance"] + amount, 2)
    db.update("accounts", account["account_id"], {"balance": new_balance})
    db.insert("transactions", {"account_id": account["account_id"], "posted_on": clock.today(),
                               "amount": round(amount, 2), "direction": "credit", "kind": kind,
                               "counterparty": counterparty, "description": description, "status": "posted"})
    return new_balance


def within_daily_limit(account, amount):
    used = spent_today(account["account_id"])
    if used + amount > account["daily_transfer_limit"]:
        raise ToolError(f"this exceeds the daily transfer limit of {account['daily_transfer_limit']:.2f} "
                        f"on {account['account_id']} ({used:.2f} already sent today)")


def public_customer(customer):
    return {"customer_id": customer["customer_id"], "first_name": customer["first_name"],
            "last_name": customer["last_name"]}


@tool("read")
def find_customer_by_email(email: str) -> dict:
    """Find a customer's id from the email address on file.

    Args:
        email: The customer's email address, e.g. "ana.lopez12@mail.com".
    """
    return public_customer(db.one("customers", {"email": email.strip().lower()}))


@tool("read")
def find_customer_by_name(first_name: str, last_name: str, date_of_birth: str) -> dict:
    """Find a customer's id from their full name and date of birth.

    Args:
        first_name: Given name, e.g. "Ana".
        last_name: Family name, e.g. "Lopez".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1984-03-09".
    """
    rows = db.find("customers", {"first_name": first_name.strip(), "last_name": last_name.strip(),
                                 "date_of_birth": date_of_birth})
    if not rows:
        raise ToolError(f"no customer named {first_name} {last_name} born {date_of_birth}")
    if len(rows) > 1:
        raise ToolError("more than one customer matches; ask for the email address instead")
    return public_customer(rows[0])


@tool("write")
def verify_identity(customer_id: str, date_of_birth: str, phone_last4: str) -> dict:
    """Verify the caller is the customer, by date of birth and the last four digits of their phone.

    Required once per conversation before any customer data is shown or changed.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        date_of_birth: Date of birth as YYYY-MM-DD, e.g. "1984-03-09".
        phone_last4: Last four digits of the phone number on file, e.g. "4821".
    """
    customer = db.get("customers", customer_id)
    if customer["date_of_birth"] != date_of_birth or customer["phone"][-4:] != phone_last4:
        raise ToolError("identity could not be verified with the details given")
    done = db.find("identity_checks", {"customer_id": customer_id})
    if done:
        return {"customer_id": customer_id, "verified": True, "check_id": done[0]["check_id"]}
    check = db.insert("identity_checks", {"customer_id": customer_id, "verified_at": clock.now(),
                                          "method": "dob_and_phone"})
    return {"customer_id": customer_id, "verified": True, "check_id": check["check_id"]}


@tool("read")
def get_customer_profile(customer_id: str) -> dict:
    """Show a verified customer's profile: contact details, segment, KYC and status.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
    """
    return verified_customer(customer_id)


@tool("read")
def list_accounts(customer_id: str) -> list:
    """List a verified customer's accounts with type, currency, balance, limits and status.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
    """
    verified_customer(customer_id)
    return db.find("accounts", {"customer_id": customer_id})


@tool("read")
def get_account(customer_id: str, account_id: str) -> dict:
    """Show one of a verified customer's accounts.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        account_id: The account id, e.g. "ACC-000108".
    """
    verified_customer(customer_id)
    return owned_account(customer_id, account_id)


@tool("read")
def list_transactions(customer_id: str, account_id: str, start_date: str | None = None,
                      end_date: str | None = None, direction: Literal["debit", "credit"] | None = None) -> list:
    """List an account's transactions, newest first, optionally within dates or one direction.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        account_id: The account id, e.g. "ACC-000108".
        start_date: Earliest posting date included, YYYY-MM-DD, e.g. "2026-05-01".
        end_date: Latest posting date included, YYYY-MM-DD, e.g. "2026-05-31".
        direction: Only "debit" (money out) or "credit" (money in) transactions.
    """
    verified_customer(customer_id)
    owned_account(customer_id, account_id)
    rows = db.find("transactions", {"account_id": account_id}, order_by="-posted_on")
    if start_date:
        rows = [r for r in rows if r["posted_on"] >= start_date]
    if end_date:
        rows = [r for r in rows if r["posted_on"] <= end_date]
    if direction:
        rows = [r for r in rows if r["direction"] == direction]
    return rows


@tool("read")
def list_cards(customer_id: str) -> list:
    """List the cards on all of a verified customer's accounts.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
    """
    verified_customer(customer_id)
    cards = []
    for account in db.find("accounts", {"customer_id": customer_id}):
        cards.extend(db.find("cards", {"account_id": account["account_id"]}))
    return cards


@tool("read")
def list_payees(customer_id: str) -> list:
    """List a verified customer's saved payees.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
    """
    verified_customer(customer_id)
    return db.find("payees", {"customer_id": customer_id})


@tool("read")
def list_loans(customer_id: str) -> list:
    """List a verified customer's loans with outstanding balance, rate and next due date.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
    """
    verified_customer(customer_id)
    return db.find("loans", {"customer_id": customer_id})


@tool("read")
def list_disputes(customer_id: str) -> list:
    """List the disputes a verified customer has opened on card transactions.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
    """
    verified_customer(customer_id)
    disputes = []
    for account in db.find("accounts", {"customer_id": customer_id}):
        for txn in db.find("transactions", {"account_id": account["account_id"], "status": "disputed"}):
            disputes.extend(db.find("disputes", {"transaction_id": txn["transaction_id"]}))
    return disputes


@tool("read")
def convert_currency(amount: float, from_currency: str, to_currency: str) -> dict:
    """Convert an amount between currencies at today's reference rate.

    Args:
        amount: The amount to convert, e.g. 250.0.
        from_currency: ISO code of the amount's currency, e.g. "EUR".
        to_currency: ISO code to convert to, e.g. "USD".
    """
    source = db.get("exchange_rates", from_currency.upper())
    target = db.get("exchange_rates", to_currency.upper())
    converted = round(amount * source["rate_to_eur"] / target["rate_to_eur"], 2)
    return {"amount": amount, "from_currency": source["currency"], "to_currency": target["currency"],
            "converted_amount": converted}


@tool("write")
def transfer_between_accounts(customer_id: str, from_account_id: str, to_account_id: str, amount: float) -> dict:
    """Move money between two open accounts of the same customer, in the same currency.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        from_account_id: The account to take the money from, e.g. "ACC-000108".
        to_account_id: The account to put the money in, e.g. "ACC-000109".
        amount: The amount to move, e.g. 150.0.
    """
    active_customer(customer_id)
    if from_account_id == to_account_id:
        raise ToolError("the two accounts must differ")
    source = open_account_of(customer_id, from_account_id)
    target = open_account_of(customer_id, to_account_id)
    if source["currency"] != target["currency"]:
        raise ToolError(f"currencies differ ({source['currency']} vs {target['currency']}); "
                        "transfers between own accounts must be in one currency")
    within_daily_limit(source, amount)
    from_balance, txn = debit(source, amount, "transfer_out", to_account_id, "Transfer to own account")
    to_balance = credit(target, amount, "transfer_in", from_account_id, "Transfer from own account")
    return {"transaction_id": txn["transaction_id"], "amount": round(amount, 2), "currency": source["currency"],
            "from_balance": from_balance, "to_balance": to_balance}


@tool("write")
def pay_payee(customer_id: str, from_account_id: str, payee_id: str, amount: float) -> dict:
    """Pay one of the customer's saved payees from an open account. Standard customers pay a 0.50 fee.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        from_account_id: The account to pay from, e.g. "ACC-000108".
        payee_id: The saved payee's id, e.g. "PAY-000017".
        amount: The amount to pay, e.g. 89.9.
    """
    customer = active_customer(customer_id)
    source = open_account_of(customer_id, from_account_id)
    payee = db.get("payees", payee_id)
    if payee["customer_id"] != customer_id:
        raise ToolError(f"payee {payee_id} is not saved for customer {customer_id}")
    within_daily_limit(source, amount)
    fee = 0.0 if customer["segment"] in FEE_FREE_SEGMENTS else PAYMENT_FEE
    if round(source["balance"] - amount - fee, 2) < -source["overdraft_limit"]:
        raise ToolError(f"insufficient funds in {from_account_id} for {amount:.2f} plus a {fee:.2f} fee")
    balance, txn = debit(source, amount, "bill_payment", payee["name"], f"Payment to {payee['name']}")
    if fee:
        balance, _ = debit(db.get("accounts", from_account_id), fee, "fee", "bank", "Payment fee")
    return {"transaction_id": txn["transaction_id"], "payee": payee["name"], "amount": round(amount, 2),
            "fee": fee, "balance": balance}


@tool("write")
def add_payee(customer_id: str, name: str, iban: str,
              category: Literal["utilities", "rent", "insurance", "telecom", "family", "services", "other"]) -> dict:
    """Save a new payee for a customer (at most 8; one entry per IBAN).

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        name: The payee's name, e.g. "Northwind Energy".
        iban: The payee's IBAN, e.g. "DE89370400440532013000".
        category: What the payee is for, e.g. "utilities".
    """
    active_customer(customer_id)
    iban = iban.replace(" ", "").upper()
    if len(iban) < 15 or not iban[:2].isalpha() or not iban[2:4].isdigit():
        raise ToolError(f"{iban} is not a valid IBAN")
    payees = db.find("payees", {"customer_id": customer_id})
    if len(payees) >= MAX_PAYEES:
        raise ToolError(f"customers can save at most {MAX_PAYEES} payees")
    if [p for p in payees if p["iban"] == iban]:
        raise ToolError(f"a payee with IBAN {iban} is already saved")
    return db.insert("payees", {"customer_id": customer_id, "name": name.strip(), "iban": iban,
                                "category": category, "added_on": clock.today()})


@tool("write")
def remove_payee(customer_id: str, payee_id: str) -> dict:
    """Delete one of a customer's saved payees.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        payee_id: The saved payee's id, e.g. "PAY-000017".
    """
    active_customer(customer_id)
    payee = db.get("payees", payee_id)
    if payee["customer_id"] != customer_id:
        raise ToolError(f"payee {payee_id} is not saved for customer {customer_id}")
    db.delete("payees", payee_id)
    return {"removed": payee_id, "name": payee["name"]}


@tool("write")
def block_card(customer_id: str, card_id: str, reason: Literal["lost", "stolen", "damaged", "suspected_fraud"]) -> dict:
    """Block an active card at once, e.g. when it is lost or stolen.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        card_id: The card's id, e.g. "CRD-000311".
        reason: Why the card is blocked, e.g. "lost".
    """
    verified_customer(customer_id)
    card = owned_card(customer_id, card_id)
    if card["status"] != "active":
        raise ToolError(f"card {card_id} is {card['status']}; only active cards can be blocked")
    return db.update("cards", card_id, {"status": "blocked", "block_reason": reason})


@tool("write")
def order_replacement_card(customer_id: str, card_id: str) -> dict:
    """Replace a blocked card: the old card is cancelled and a new one issued on the same account.

    Standard customers are charged a 5.00 replacement fee on that account.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        card_id: The blocked card's id, e.g. "CRD-000311".
    """
    customer = active_customer(customer_id)
    card = owned_card(customer_id, card_id)
    if card["status"] != "blocked":
        raise ToolError(f"card {card_id} is {card['status']}; block it before ordering a replacement")
    account = db.get("accounts", card["account_id"])
    fee = 0.0 if customer["segment"] in FEE_FREE_SEGMENTS else REPLACEMENT_CARD_FEE
    if fee:
        debit(account, fee, "fee", "bank", f"Replacement of card {card_id}")
    db.update("cards", card_id, {"status": "cancelled"})
    digits = int(card_id.split("-")[-1])
    new_card = db.insert("cards", {"account_id": card["account_id"], "card_type": card["card_type"],
                                   "last4": str((digits * 7919 + 1201) % 10000).zfill(4), "status": "active",
                                   "daily_limit": card["daily_limit"], "expires_on": clock.add_days(clock.today(), 1461),
                                   "block_reason": None})
    return {"new_card_id": new_card["card_id"], "last4": new_card["last4"], "expires_on": new_card["expires_on"],
            "fee": fee, "replaces": card_id}


@tool("write")
def set_card_daily_limit(customer_id: str, card_id: str, daily_limit: float) -> dict:
    """Change an active card's daily spending limit (100 to 2,000; up to 5,000 for premium and business).

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        card_id: The card's id, e.g. "CRD-000311".
        daily_limit: The new daily limit, e.g. 1500.0.
    """
    customer = active_customer(customer_id)
    card = owned_card(customer_id, card_id)
    if card["status"] != "active":
        raise ToolError(f"card {card_id} is {card['status']}; only active cards have limits")
    ceiling = CARD_LIMIT_MAX[customer["segment"]]
    if daily_limit < CARD_LIMIT_MIN or daily_limit > ceiling:
        raise ToolError(f"the daily limit must be between {CARD_LIMIT_MIN:.0f} and {ceiling:.0f} "
                        f"for {customer['segment']} customers")
    return db.update("cards", card_id, {"daily_limit": daily_limit})


@tool("write")
def open_account(customer_id: str, account_type: Literal["checking", "savings"], currency: str) -> dict:
    """Open a new account with a zero balance for a KYC-verified customer (at most 4 open accounts).

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        account_type: The kind of account, e.g. "savings".
        currency: ISO code of the account currency, e.g. "EUR".
    """
    customer = active_customer(customer_id)
    if customer["kyc_status"] != "verified":
        raise ToolError("KYC checks are not complete; new accounts need a verified KYC status")
    rate = db.find("exchange_rates", {"currency": currency.upper()})
    if not rate:
        raise ToolError(f"accounts cannot be held in {currency}")
    open_accounts = db.find("accounts", {"customer_id": customer_id, "status": "open"})
    if len(open_accounts) >= MAX_OPEN_ACCOUNTS:
        raise ToolError(f"customers can hold at most {MAX_OPEN_ACCOUNTS} open accounts")
    return db.insert("accounts", {"customer_id": customer_id, "account_type": account_type,
                                  "currency": currency.upper(), "status": "open", "balance": 0.0,
                                  "overdraft_limit": 0.0, "daily_transfer_limit": 2500.0,
                                  "opened_on": clock.today()})


@tool("write")
def close_account(customer_id: str, account_id: str) -> dict:
    """Close an open account whose balance is exactly zero; its active cards are cancelled.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        account_id: The account id, e.g. "ACC-000108".
    """
    active_customer(customer_id)
    account = open_account_of(customer_id, account_id)
    if account["balance"] != 0:
        raise ToolError(f"account {account_id} holds {account['balance']:.2f}; move the money out first")
    cancelled = []
    for card in db.find("cards", {"account_id": account_id}):
        if card["status"] in ["active", "blocked"]:
            db.update("cards", card["card_id"], {"status": "cancelled"})
            cancelled.append(card["card_id"])
    db.update("accounts", account_id, {"status": "closed"})
    return {"account_id": account_id, "status": "closed", "cancelled_cards": cancelled}


@tool("write")
def dispute_transaction(customer_id: str, transaction_id: str,
                        reason: Literal["unauthorized", "duplicate", "not_received", "incorrect_amount"]) -> dict:
    """Dispute a posted card purchase made within the last 60 days.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        transaction_id: The transaction's id, e.g. "TXN-004518".
        reason: Why it is disputed, e.g. "unauthorized".
    """
    active_customer(customer_id)
    txn = db.get("transactions", transaction_id)
    owned_account(customer_id, txn["account_id"])
    if txn["kind"] != "card_purchase" or txn["direction"] != "debit":
        raise ToolError("only card purchases can be disputed")
    if txn["status"] != "posted":
        raise ToolError(f"transaction {transaction_id} is {txn['status']}; only posted purchases can be disputed")
    if clock.days_between(txn["posted_on"], clock.today()) > DISPUTE_WINDOW_DAYS:
        raise ToolError(f"purchases older than {DISPUTE_WINDOW_DAYS} days cannot be disputed")
    db.update("transactions", transaction_id, {"status": "disputed"})
    return db.insert("disputes", {"transaction_id": transaction_id, "reason": reason, "status": "open",
                                  "amount": txn["amount"], "opened_on": clock.today()})


@tool("write")
def make_loan_payment(customer_id: str, loan_id: str, from_account_id: str, amount: float) -> dict:
    """Pay toward an active or delinquent loan from an open account in the loan's currency.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        loan_id: The loan's id, e.g. "LOA-000023".
        from_account_id: The account to pay from, e.g. "ACC-000108".
        amount: The amount to pay, e.g. 420.0.
    """
    active_customer(customer_id)
    loan = db.owned("loans", loan_id, "customer_id", customer_id)
    if loan["status"] == "paid_off":
        raise ToolError(f"loan {loan_id} is already paid off")
    source = open_account_of(customer_id, from_account_id)
    if source["currency"] != loan["currency"]:
        raise ToolError(f"loan {loan_id} is in {loan['currency']}; pay it from a {loan['currency']} account")
    if amount > loan["outstanding_balance"]:
        raise ToolError(f"the payment exceeds the outstanding balance of {loan['outstanding_balance']:.2f}")
    within_daily_limit(source, amount)
    balance, txn = debit(source, amount, "loan_payment", loan_id, f"Payment on loan {loan_id}")
    outstanding = round(loan["outstanding_balance"] - amount, 2)
    status = "paid_off" if outstanding == 0 else ("active" if loan["status"] == "delinquent" and
                                                   amount >= loan["monthly_payment"] else loan["status"])
    db.update("loans", loan_id, {"outstanding_balance": outstanding, "status": status})
    return {"transaction_id": txn["transaction_id"], "loan_id": loan_id, "outstanding_balance": outstanding,
            "loan_status": status, "account_balance": balance}


@tool("write")
def update_contact_details(customer_id: str, email: str | None = None, phone: str | None = None) -> dict:
    """Change a customer's email address and/or phone number.

    Args:
        customer_id: The customer's id, e.g. "CUS-000042".
        email: The new email address, e.g. "ana.lopez@proton.me".
        phone: The new phone number with country code, e.g. "+34 612 345 678".
    """
    active_customer(customer_id)
    changes = {}
    if email is not None:
        email = email.strip().lower()
        if "@" not in email or "." not in email.split("@")[-1]:
            raise ToolError(f"{email} is not a valid email address")
        if db.find("customers", {"email": email}):
            raise ToolError(f"{email} is already used by another customer")
        changes["email"] = email
    if phone is not None:
        if len(digits_of(phone)) < 8:
            raise ToolError(f"{phone} is not a valid phone number")
        changes["phone"] = phone.strip()
    if not changes:
        raise ToolError("give a new email or phone number")
    return db.update("customers", customer_id, changes)


@tool("write")
def transfer_to_human_agents(reason: Literal["large_dispute", "early_repayment", "branch_withdrawal", "other"],
                             summary: str | None = None) -> dict:
    """Hand the customer over to a human agent, when the policy says a request is theirs to handle.

    Args:
        reason: Why the customer is handed over, e.g. "large_dispute".
        summary: A short note of the request for the human agent, e.g. "wants to dispute a 720.00 purchase".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
