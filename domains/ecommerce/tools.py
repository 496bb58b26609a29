"""Marketplace buyer-support tools. Restricted Python: `db`, `clock` and `ToolError` are given, nothing is imported."""

SHIPPING_FEE = 4.9
FREE_SHIPPING_TIERS = ["gold", "platinum"]
MAX_LINE_QUANTITY = 10
POINTS_BLOCK = 100
POINT_VALUE_EUR = 0.01
POINTS_MAX_SHARE = 0.5
EARN_RATE = {"bronze": 1.0, "silver": 1.25, "gold": 1.5, "platinum": 2.0}
CASHBACK_RATE = 0.02
CASHBACK_TIERS = ["gold", "platinum"]
REWARD_MODE_COOLDOWN_DAYS = 90
CLAIM_AFTER_DAYS = 10
CLAIM_WINDOW_DAYS = 90
REVIEW_WINDOW_DAYS = 60
SUBSCRIPTION_INTERVALS = [2, 4, 6, 8]
MAX_SUBSCRIPTION_QUANTITY = 5
MAX_SUBSCRIPTIONS = 4
SKIP_CUTOFF_DAYS = 2
FIRST_DELIVERY_DAYS = 3
SEARCH_LIMIT = 15
EU_COUNTRIES = ["DE", "FR", "NL", "IT", "ES", "PL", "SE"]
CARRIER_BY_COUNTRY = {"DE": "DHL", "FR": "Colissimo", "NL": "PostNL", "IT": "BRT", "ES": "SEUR", "PL": "InPost",
                      "GB": "Royal Mail", "US": "UPS", "SE": "PostNord"}
TRACKING_PREFIX = {"DHL": "JJD", "Colissimo": "6A", "PostNL": "3SNL", "BRT": "BRT", "SEUR": "SEU", "InPost": "IP",
                   "Royal Mail": "RM", "UPS": "1Z", "PostNord": "PN"}


def money(value):
    return round(value + 0.0, 2)


def rate_of(currency):
    return db.get("exchange_rates", currency)["rate_to_eur"]


def line_total_eur(price, quantity, currency):
    return round(price * quantity * rate_of(currency), 2)


def verified_shopper(shopper_id):
    shopper = db.get("shoppers", shopper_id)
    db.ensure("identity_checks", {"shopper_id": shopper_id},
              "shopper not verified: call verify_shopper for this shopper first")
    return shopper


def active_shopper(shopper_id):
    shopper = verified_shopper(shopper_id)
    if shopper["status"] != "active":
        raise ToolError(f"shopper {shopper_id} is {shopper['status']}; this action is not allowed")
    return shopper


def owned_parcel(shopper_id, parcel_id):
    parcel = db.get("parcels", parcel_id)
    order = db.get("purchases", parcel["purchase_id"])
    if order["shopper_id"] != shopper_id:
        raise ToolError(f"parcel {parcel_id} does not belong to shopper {shopper_id}")
    return parcel


def owned_subscription(shopper_id, subscription_id):
    sub = db.owned("subscriptions", subscription_id, "shopper_id", shopper_id)
    return sub


def find_coupon(code):
    rows = db.find("coupons", {"code": code.strip().upper()})
    if not rows:
        raise ToolError(f"there is no coupon with code {code}")
    return rows[0]


def listing_problem(listing, seller, quantity):
    if listing["status"] != "active":
        return f"'{listing['title']}' ({listing['listing_id']}) is no longer offered"
    if seller["status"] != "active":
        return f"seller {seller['name']} is on vacation and is not taking orders"
    if listing["stock"] < quantity:
        return f"only {listing['stock']} of '{listing['title']}' ({listing['listing_id']}) left in stock"
    return None


def priced_cart(shopper_id):
    lines = []
    for item in db.find("cart_items", {"shopper_id": shopper_id}):
        listing = db.get("listings", item["listing_id"])
        seller = db.get("sellers", listing["seller_id"])
        problem = listing_problem(listing, seller, item["quantity"])
        lines.append({"cart_item_id": item["cart_item_id"], "listing_id": listing["listing_id"],
                      "title": listing["title"], "category": listing["category"], "seller_id": seller["seller_id"],
                      "seller": seller["name"], "quantity": item["quantity"], "unit_price": listing["price"],
                      "currency": listing["currency"],
                      "line_total_eur": line_total_eur(listing["price"], item["quantity"], listing["currency"]),
                      "available": problem is None, "problem": problem})
    return lines


def shipping_for(shopper):
    return 0.0 if shopper["loyalty_tier"] in FREE_SHIPPING_TIERS else SHIPPING_FEE


def coupon_problem(shopper, coupon, lines, items_total):
    """Why the coupon cannot be used on these cart lines (None if it can), and the discount it gives."""
    if coupon["expires_on"] < clock.today():
        return f"coupon {coupon['code']} expired on {coupon['expires_on']}", 0.0
    if items_total < coupon["min_spend_eur"]:
        return (f"coupon {coupon['code']} needs a minimum spend of {coupon['min_spend_eur']:.2f} EUR; "
                f"the items total {items_total:.2f} EUR"), 0.0
    if coupon["single_use"] and db.find("coupon_redemptions", {"code": coupon["code"],
                                                               "shopper_id": shopper["shopper_id"]}):
        return f"coupon {coupon['code']} can be used once per shopper and was already used", 0.0
    eligible = items_total
    if coupon["category"]:
        eligible = money(sum(l["line_total_eur"] for l in lines if l["category"] == coupon["category"]))
        if eligible <= 0:
            return f"coupon {coupon['code']} applies only to {coupon['category']} items and the cart has none", 0.0
    if coupon["kind"] == "percent":
        discount = money(eligible * coupon["value"] / 100)
    else:
        discount = money(min(coupon["value"], eligible))
    return None, discount


def public_shopper(shopper):
    return {"shopper_id": shopper["shopper_id"], "first_name": shopper["first_name"],
            "last_name": shopper["last_name"]}


@tool("read")
def find_shopper_by_email(email: str) -> dict:
    """Find a shopper's id from the email address of their account.

    Args:
        email: The account's email address, e.g. "lena.vogel23@mail.com".
    """
    return public_shopper(db.one("shoppers", {"email": email.strip().lower()}))


@tool("read")
def find_shopper_by_name(first_name: str, last_name: str, postcode: str) -> dict:
    """Find a shopper's id from their full name and the postcode of their address.

    Args:
        first_name: Given name, e.g. "Lena".
        last_name: Family name, e.g. "Vogel".
        postcode: Postcode of the shopper's address, e.g. "36630".
    """
    wanted = postcode.replace(" ", "").upper()
    rows = [s for s in db.find("shoppers", {"first_name": first_name.strip(), "last_name": last_name.strip()})
            if s["postcode"].replace(" ", "").upper() == wanted]
    if not rows:
        raise ToolError(f"no shopper named {first_name} {last_name} with postcode {postcode}")
    if len(rows) > 1:
        raise ToolError("more than one shopper matches; ask for the email address instead")
    return public_shopper(rows[0])


@tool("write")
def verify_shopper(shopper_id: str, postcode: str, phone_last4: str) -> dict:
    """Verify the caller owns the account, by the postcode and the last four digits of the phone on file.

    Required once per conversation before any account detail is shown or changed.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        postcode: Postcode of the shopper's address, e.g. "36630".
        phone_last4: Last four digits of the phone number on file, e.g. "4821".
    """
    shopper = db.get("shoppers", shopper_id)
    if (shopper["postcode"].replace(" ", "").upper() != postcode.replace(" ", "").upper()
            or shopper["phone"][-4:] != phone_last4.strip()):
        raise ToolError("the shopper could not be verified with the details given")
    done = db.find("identity_checks", {"shopper_id": shopper_id})
    if done:
        return {"shopper_id": shopper_id, "verified": True, "check_id": done[0]["check_id"]}
    check = db.insert("identity_checks", {"shopper_id": shopper_id, "verified_at": clock.now(),
                                          "method": "postcode_and_phone"})
    return {"shopper_id": shopper_id, "verified": True, "check_id": check["check_id"]}


@tool("read")
def get_shopper_account(shopper_id: str) -> dict:
    """Show a verified shopper's account: contact details, loyalty tier, points, wallet and reward preferences.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
    """
    shopper = verified_shopper(shopper_id)
    account = dict(shopper)
    account["points_value_eur"] = money(shopper["points_balance"] * POINT_VALUE_EUR)
    account["points_earn_rate_per_eur"] = EARN_RATE[shopper["loyalty_tier"]]
    account["free_shipping"] = shopper["loyalty_tier"] in FREE_SHIPPING_TIERS
    account["cart_lines"] = db.count("cart_items", {"shopper_id": shopper_id})
    return account


@tool("read")
def search_listings(keyword: str | None = None,
                    category: Literal["electronics", "home_kitchen", "fashion", "books", "toys", "sports_outdoors",
                                      "beauty", "grocery", "pet_supplies", "household"] | None = None,
                    min_price_eur: float | None = None, max_price_eur: float | None = None,
                    in_stock_only: bool = False) -> list:
    """Search the listings that can be ordered now, cheapest first (in euros), by title words, category and price.

    Paused listings and listings of sellers on vacation are left out. At most 15 results. Prices are shown
    in the seller's currency and converted to euros.

    Args:
        keyword: Words that must all appear in the title, e.g. "espresso beans".
        category: Only listings of this category, e.g. "grocery".
        min_price_eur: Lowest unit price in euros, e.g. 10.0.
        max_price_eur: Highest unit price in euros, e.g. 50.0.
        in_stock_only: Leave out listings with no stock, e.g. true.
    """
    if not keyword and not category and min_price_eur is None and max_price_eur is None:
        raise ToolError("give a keyword, a category or a price range to search")
    words = [w for w in (keyword or "").lower().split(" ") if w]
    where = {"status": "active"}
    if category:
        where["category"] = category
    found = []
    for listing in db.find("listings", where):
        title = listing["title"].lower()
        if [w for w in words if w not in title]:
            continue
        price_eur = line_total_eur(listing["price"], 1, listing["currency"])
        if min_price_eur is not None and price_eur < min_price_eur:
            continue
        if max_price_eur is not None and price_eur > max_price_eur:
            continue
        if in_stock_only and listing["stock"] <= 0:
            continue
        seller = db.get("sellers", listing["seller_id"])
        if seller["status"] != "active":
            continue
        found.append({"listing_id": listing["listing_id"], "title": listing["title"], "category": listing["category"],
                      "seller_id": seller["seller_id"], "seller": seller["name"], "price": listing["price"],
                      "currency": listing["currency"], "price_eur": price_eur, "stock": listing["stock"],
                      "seller_rating": seller["rating"]})
    found.sort(key=lambda r: (r["price_eur"], r["listing_id"]))
    return found[:SEARCH_LIMIT]


@tool("read")
def get_listing(listing_id: str) -> dict:
    """Show one listing: price in its currency and in euros, stock, seller and subscribe-and-save discount.

    Args:
        listing_id: The listing's id, e.g. "LST-000017".
    """
    listing = db.get("listings", listing_id)
    seller = db.get("sellers", listing["seller_id"])
    result = dict(listing)
    result["price_eur"] = line_total_eur(listing["price"], 1, listing["currency"])
    result["seller"] = seller["name"]
    result["seller_status"] = seller["status"]
    result["subscribe_and_save"] = listing["subscribe_discount_pct"] > 0
    return result


@tool("read")
def get_seller(seller_id: str) -> dict:
    """Show a seller's profile: rating, number of reviews, country shipped from and return window.

    Args:
        seller_id: The seller's id, e.g. "SEL-000004".
    """
    seller = dict(db.get("sellers", seller_id))
    seller["active_listings"] = db.count("listings", {"seller_id": seller_id, "status": "active"})
    seller["ships_from_eu"] = seller["ships_from"] in EU_COUNTRIES
    return seller


@tool("read")
def view_cart(shopper_id: str) -> dict:
    """Show a verified shopper's cart: each line priced in euros, whether it can be bought, and the totals.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
    """
    shopper = verified_shopper(shopper_id)
    lines = priced_cart(shopper_id)
    items_total = money(sum(l["line_total_eur"] for l in lines))
    shipping = shipping_for(shopper) if lines else 0.0
    return {"shopper_id": shopper_id, "lines": lines, "items_total_eur": items_total, "shipping_fee_eur": shipping,
            "total_before_discounts_eur": money(items_total + shipping)}


@tool("read")
def list_purchases(shopper_id: str, placed_from: str | None = None, placed_to: str | None = None) -> list:
    """List a verified shopper's purchases (orders), newest first, with their parcels, tracking and what was paid how.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        placed_from: Earliest order date included, YYYY-MM-DD, e.g. "2026-03-01".
        placed_to: Latest order date included, YYYY-MM-DD, e.g. "2026-03-31".
    """
    verified_shopper(shopper_id)
    result = []
    for order in db.find("purchases", {"shopper_id": shopper_id}, order_by="-placed_on"):
        if placed_from and order["placed_on"] < placed_from:
            continue
        if placed_to and order["placed_on"] > placed_to:
            continue
        parcels = []
        for parcel in db.find("parcels", {"purchase_id": order["purchase_id"]}):
            listing = db.get("listings", parcel["listing_id"])
            seller = db.get("sellers", listing["seller_id"])
            parcels.append({"parcel_id": parcel["parcel_id"], "listing_id": listing["listing_id"],
                            "title": listing["title"], "seller_id": seller["seller_id"], "seller": seller["name"],
                            "quantity": parcel["quantity"], "unit_price": parcel["unit_price"],
                            "currency": parcel["currency"], "line_total_eur": parcel["line_total_eur"],
                            "carrier": parcel["carrier"], "tracking_number": parcel["tracking_number"],
                            "status": parcel["status"], "dispatch_date": parcel["dispatch_date"],
                            "delivery_date": parcel["delivery_date"], "reviewed": parcel["reviewed"]})
        items_total = money(sum(p["line_total_eur"] for p in parcels))
        points_value = money(order["points_redeemed"] * POINT_VALUE_EUR)
        card_paid = money(items_total + order["shipping_fee"] - order["discount"] - points_value - order["wallet_paid"])
        result.append({"purchase_id": order["purchase_id"], "placed_on": order["placed_on"], "items_total_eur": items_total,
                       "shipping_fee_eur": order["shipping_fee"], "coupon_code": order["coupon_code"],
                       "discount_eur": order["discount"], "points_redeemed": order["points_redeemed"],
                       "wallet_paid_eur": order["wallet_paid"], "card_paid_eur": card_paid, "parcels": parcels})
    return result


@tool("read")
def track_parcel(tracking_number: str) -> dict:
    """Track a parcel by its carrier tracking number: status, dispatch date and (estimated) delivery date.

    Args:
        tracking_number: The carrier's tracking number, e.g. "JJD4829301746".
    """
    parcel = db.one("parcels", {"tracking_number": tracking_number.strip().upper()})
    listing = db.get("listings", parcel["listing_id"])
    delivered = parcel["status"] == "delivered"
    days = max(clock.days_between(parcel["dispatch_date"], clock.today()), 0)
    return {"tracking_number": parcel["tracking_number"], "carrier": parcel["carrier"], "status": parcel["status"],
            "item": listing["title"], "dispatch_date": parcel["dispatch_date"],
            "delivered_on": parcel["delivery_date"] if delivered else None,
            "estimated_delivery": None if delivered else parcel["delivery_date"],
            "days_since_dispatch": days if parcel["status"] != "label_created" else 0}


@tool("read")
def check_coupon(shopper_id: str, code: str) -> dict:
    """Check whether a coupon can be used on a verified shopper's current cart, and what it would take off.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        code: The coupon code, e.g. "WELCOME10".
    """
    shopper = verified_shopper(shopper_id)
    coupon = find_coupon(code)
    lines = priced_cart(shopper_id)
    items_total = money(sum(l["line_total_eur"] for l in lines))
    problem, discount = coupon_problem(shopper, coupon, lines, items_total)
    return {"code": coupon["code"], "description": coupon["description"], "valid": problem is None,
            "reason": problem, "discount_eur": discount, "items_total_eur": items_total,
            "min_spend_eur": coupon["min_spend_eur"], "category": coupon["category"],
            "expires_on": coupon["expires_on"], "single_use": coupon["single_use"]}


@tool("read")
def check_gift_card(code: str) -> dict:
    """Look up a gift card by its code: balance, currency, status and expiry date.

    Args:
        code: The gift card code, e.g. "KQTR-4821-MBNZ".
    """
    card = db.one("gift_cards", {"code": code.strip().upper()})
    return {"code": card["code"], "currency": card["currency"], "balance": card["balance"], "status": card["status"],
            "expires_on": card["expires_on"], "expired": card["expires_on"] < clock.today()}


@tool("read")
def list_subscriptions(shopper_id: str) -> list:
    """List a verified shopper's subscribe-and-save plans with item, interval, next delivery and price per delivery.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
    """
    verified_shopper(shopper_id)
    result = []
    for sub in db.find("subscriptions", {"shopper_id": shopper_id}):
        listing = db.get("listings", sub["listing_id"])
        full = line_total_eur(listing["price"], sub["quantity"], listing["currency"])
        row = dict(sub)
        row["title"] = listing["title"]
        row["price_per_delivery_eur"] = money(full * (100 - sub["discount_pct"]) / 100)
        result.append(row)
    return result


@tool("write")
def add_to_cart(shopper_id: str, listing_id: str, quantity: int) -> dict:
    """Put a listing in a verified shopper's cart, or raise the quantity of the line already holding it.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        listing_id: The listing's id, e.g. "LST-000017".
        quantity: How many to add, e.g. 2.
    """
    active_shopper(shopper_id)
    listing = db.get("listings", listing_id)
    seller = db.get("sellers", listing["seller_id"])
    if quantity < 1:
        raise ToolError("the quantity must be at least 1")
    existing = db.find("cart_items", {"shopper_id": shopper_id, "listing_id": listing_id})
    total = quantity + sum(i["quantity"] for i in existing)
    if total > MAX_LINE_QUANTITY:
        raise ToolError(f"at most {MAX_LINE_QUANTITY} of one listing fit in a cart")
    problem = listing_problem(listing, seller, total)
    if problem:
        raise ToolError(problem)
    if existing:
        line = db.update("cart_items", existing[0]["cart_item_id"], {"quantity": total, "added_on": clock.today()})
    else:
        line = db.insert("cart_items", {"shopper_id": shopper_id, "listing_id": listing_id, "quantity": quantity,
                                        "added_on": clock.today()})
    lines = priced_cart(shopper_id)
    return {"cart_item_id": line["cart_item_id"], "listing_id": listing_id, "title": listing["title"],
            "quantity": line["quantity"],
            "line_total_eur": line_total_eur(listing["price"], line["quantity"], listing["currency"]),
            "cart_items_total_eur": money(sum(l["line_total_eur"] for l in lines))}


@tool("write")
def remove_from_cart(shopper_id: str, cart_item_id: str) -> dict:
    """Take a line out of a verified shopper's cart.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        cart_item_id: The cart line's id, e.g. "CIT-000031".
    """
    active_shopper(shopper_id)
    item = db.get("cart_items", cart_item_id)
    if item["shopper_id"] != shopper_id:
        raise ToolError(f"cart line {cart_item_id} is not in shopper {shopper_id}'s cart")
    db.delete("cart_items", cart_item_id)
    lines = priced_cart(shopper_id)
    return {"removed": cart_item_id, "listing_id": item["listing_id"], "lines_left": len(lines),
            "cart_items_total_eur": money(sum(l["line_total_eur"] for l in lines))}


@tool("write")
def checkout_cart(shopper_id: str, coupon_code: str | None = None, points_to_redeem: int = 0,
                  use_wallet: bool = False) -> dict:
    """Buy everything in a verified shopper's cart; the rest after coupon, points and wallet goes on the card on file.

    Every line must be orderable. Points go in blocks of 100 (100 points = 1.00 EUR) and pay at most half
    the items total after the coupon. Shipping is 4.90 EUR per order, free for gold and platinum members.
    Each line ships as its own parcel. Rewards are earned on the items total after coupon and points.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        coupon_code: A coupon code to apply, e.g. "WELCOME10".
        points_to_redeem: Loyalty points to spend, a multiple of 100, e.g. 500.
        use_wallet: Pay with the wallet balance before the card, e.g. true.
    """
    shopper = active_shopper(shopper_id)
    lines = priced_cart(shopper_id)
    if not lines:
        raise ToolError("the cart is empty")
    for line in lines:
        if not line["available"]:
            raise ToolError(f"cart line {line['cart_item_id']} cannot be ordered: {line['problem']}")
    items_total = money(sum(l["line_total_eur"] for l in lines))
    discount = 0.0
    coupon = None
    if coupon_code:
        coupon = find_coupon(coupon_code)
        problem, discount = coupon_problem(shopper, coupon, lines, items_total)
        if problem:
            raise ToolError(problem)
    after_coupon = money(items_total - discount)
    if points_to_redeem < 0 or points_to_redeem % POINTS_BLOCK != 0:
        raise ToolError(f"points are redeemed in blocks of {POINTS_BLOCK}")
    if points_to_redeem > shopper["points_balance"]:
        raise ToolError(f"the shopper has only {shopper['points_balance']} points")
    points_value = money(points_to_redeem * POINT_VALUE_EUR)
    if points_value > money(after_coupon * POINTS_MAX_SHARE):
        raise ToolError(f"points may pay at most half of the items total after discounts "
                        f"({money(after_coupon * POINTS_MAX_SHARE):.2f} EUR)")
    shipping = shipping_for(shopper)
    due = money(after_coupon - points_value + shipping)
    wallet_paid = money(min(shopper["wallet_balance"], due)) if use_wallet else 0.0
    card_paid = money(due - wallet_paid)
    base = money(after_coupon - points_value)
    earned = 0
    donated = 0
    cashback = 0.0
    if shopper["reward_mode"] == "points":
        earned = int(base * EARN_RATE[shopper["loyalty_tier"]])
    elif shopper["reward_mode"] == "charity":
        donated = int(base * EARN_RATE[shopper["loyalty_tier"]])
    else:
        cashback = money(base * CASHBACK_RATE)
    order = db.insert("purchases", {"shopper_id": shopper_id, "placed_on": clock.today(), "shipping_fee": shipping,
                                 "coupon_code": coupon["code"] if coupon else None, "discount": discount,
                                 "points_redeemed": points_to_redeem, "wallet_paid": wallet_paid})
    digits = order["purchase_id"].split("-")[-1]
    parcels = []
    for n, line in enumerate(lines):
        listing = db.get("listings", line["listing_id"])
        carrier = CARRIER_BY_COUNTRY[listing["ships_from"]]
        transit = 3 if listing["ships_from"] in EU_COUNTRIES else 6
        parcel = db.insert("parcels", {"purchase_id": order["purchase_id"], "listing_id": listing["listing_id"],
                                       "quantity": line["quantity"], "unit_price": listing["price"],
                                       "currency": listing["currency"], "line_total_eur": line["line_total_eur"],
                                       "carrier": carrier,
                                       "tracking_number": f"{TRACKING_PREFIX[carrier]}26{digits}{str(n + 1).zfill(2)}",
                                       "dispatch_date": clock.add_days(clock.today(), 1), "status": "label_created",
                                       "delivery_date": clock.add_days(clock.today(), 1 + transit), "reviewed": False})
        db.update("listings", listing["listing_id"], {"stock": listing["stock"] - line["quantity"]})
        db.delete("cart_items", line["cart_item_id"])
        parcels.append({"parcel_id": parcel["parcel_id"], "title": listing["title"], "carrier": carrier,
                        "tracking_number": parcel["tracking_number"], "estimated_delivery": parcel["delivery_date"]})
    if coupon:
        db.insert("coupon_redemptions", {"code": coupon["code"], "shopper_id": shopper_id,
                                         "redeemed_on": clock.today(), "discount_eur": discount})
    points = shopper["points_balance"] - points_to_redeem + earned
    wallet = money(shopper["wallet_balance"] - wallet_paid + cashback)
    db.update("shoppers", shopper_id, {"points_balance": points, "wallet_balance": wallet})
    return {"purchase_id": order["purchase_id"], "items_total_eur": items_total, "coupon_code": order["coupon_code"],
            "discount_eur": discount, "points_redeemed": points_to_redeem, "points_value_eur": points_value,
            "shipping_fee_eur": shipping, "wallet_paid_eur": wallet_paid, "card_charged_eur": card_paid,
            "points_earned": earned, "points_donated": donated, "cashback_eur": cashback,
            "points_balance": points, "wallet_balance": wallet, "parcels": parcels}


@tool("write")
def redeem_gift_card(shopper_id: str, code: str) -> dict:
    """Move the whole balance of a euro gift card into a verified shopper's wallet; the card is then used up.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        code: The gift card code, e.g. "KQTR-4821-MBNZ".
    """
    shopper = active_shopper(shopper_id)
    card = db.one("gift_cards", {"code": code.strip().upper()})
    if card["status"] != "active" or card["balance"] <= 0:
        raise ToolError(f"gift card {card['code']} has already been redeemed")
    if card["expires_on"] < clock.today():
        raise ToolError(f"gift card {card['code']} expired on {card['expires_on']}")
    if card["currency"] != "EUR":
        raise ToolError(f"gift card {card['code']} is in {card['currency']}; only EUR gift cards can go into the wallet")
    wallet = money(shopper["wallet_balance"] + card["balance"])
    db.update("gift_cards", card["gift_card_id"], {"status": "redeemed", "balance": 0.0, "redeemed_by": shopper_id,
                                                   "redeemed_on": clock.today()})
    db.update("shoppers", shopper_id, {"wallet_balance": wallet})
    return {"code": card["code"], "amount_added_eur": card["balance"], "wallet_balance": wallet}


@tool("write")
def open_parcel_claim(shopper_id: str, parcel_id: str) -> dict:
    """Open a claim for a parcel that never arrived: lost parcels are refunded to the wallet at once,
    parcels still in transit 10 or more days after dispatch go to a carrier investigation.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        parcel_id: The parcel's id, e.g. "PCL-000118".
    """
    shopper = verified_shopper(shopper_id)
    parcel = owned_parcel(shopper_id, parcel_id)
    if db.find("claims", {"parcel_id": parcel_id}):
        raise ToolError(f"a claim is already open for parcel {parcel_id}")
    if parcel["status"] in ["delivered", "label_created"]:
        raise ToolError(f"parcel {parcel_id} is {parcel['status']}; only lost or overdue parcels can be claimed")
    days = clock.days_between(parcel["dispatch_date"], clock.today())
    if days > CLAIM_WINDOW_DAYS:
        raise ToolError(f"parcel {parcel_id} was dispatched {days} days ago; claims close {CLAIM_WINDOW_DAYS} days "
                        "after dispatch")
    if parcel["status"] == "lost":
        wallet = money(shopper["wallet_balance"] + parcel["line_total_eur"])
        db.update("shoppers", shopper_id, {"wallet_balance": wallet})
        claim = db.insert("claims", {"parcel_id": parcel_id, "shopper_id": shopper_id, "kind": "lost",
                                     "status": "refunded", "refund_eur": parcel["line_total_eur"],
                                     "opened_on": clock.today()})
        return {"claim_id": claim["claim_id"], "kind": "lost", "status": "refunded",
                "refund_eur": parcel["line_total_eur"], "wallet_balance": wallet}
    if days < CLAIM_AFTER_DAYS:
        raise ToolError(f"parcel {parcel_id} has been in transit {days} days; a claim can be opened after "
                        f"{CLAIM_AFTER_DAYS} days")
    claim = db.insert("claims", {"parcel_id": parcel_id, "shopper_id": shopper_id, "kind": "overdue",
                                 "status": "investigating", "refund_eur": 0.0, "opened_on": clock.today()})
    return {"claim_id": claim["claim_id"], "kind": "overdue", "status": "investigating", "refund_eur": 0.0,
            "carrier": parcel["carrier"]}


@tool("write")
def subscribe(shopper_id: str, listing_id: str, quantity: int, interval_weeks: int) -> dict:
    """Start a subscribe-and-save plan: the listing is delivered every 2, 4, 6 or 8 weeks at its S&S discount.

    The first delivery is 3 days from today.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        listing_id: The listing's id, e.g. "LST-000028".
        quantity: Units per delivery, 1 to 5, e.g. 2.
        interval_weeks: Weeks between deliveries: 2, 4, 6 or 8, e.g. 4.
    """
    active_shopper(shopper_id)
    listing = db.get("listings", listing_id)
    seller = db.get("sellers", listing["seller_id"])
    if listing["subscribe_discount_pct"] <= 0:
        raise ToolError(f"'{listing['title']}' is not offered on subscribe-and-save")
    if interval_weeks not in SUBSCRIPTION_INTERVALS:
        raise ToolError("deliveries can be every 2, 4, 6 or 8 weeks")
    if quantity < 1 or quantity > MAX_SUBSCRIPTION_QUANTITY:
        raise ToolError(f"a subscription delivers 1 to {MAX_SUBSCRIPTION_QUANTITY} units")
    problem = listing_problem(listing, seller, quantity)
    if problem:
        raise ToolError(problem)
    current = [s for s in db.find("subscriptions", {"shopper_id": shopper_id}) if s["status"] != "cancelled"]
    if [s for s in current if s["listing_id"] == listing_id]:
        raise ToolError(f"the shopper already has a subscription for {listing_id}")
    if len(current) >= MAX_SUBSCRIPTIONS:
        raise ToolError(f"a shopper can hold at most {MAX_SUBSCRIPTIONS} active or paused subscriptions")
    sub = db.insert("subscriptions", {"shopper_id": shopper_id, "listing_id": listing_id, "quantity": quantity,
                                      "interval_weeks": interval_weeks,
                                      "discount_pct": listing["subscribe_discount_pct"],
                                      "next_delivery": clock.add_days(clock.today(), FIRST_DELIVERY_DAYS),
                                      "status": "active", "started_on": clock.today()})
    full = line_total_eur(listing["price"], quantity, listing["currency"])
    return {"subscription_id": sub["subscription_id"], "title": listing["title"], "quantity": quantity,
            "interval_weeks": interval_weeks, "discount_pct": sub["discount_pct"],
            "price_per_delivery_eur": money(full * (100 - sub["discount_pct"]) / 100),
            "next_delivery": sub["next_delivery"]}


@tool("write")
def skip_next_delivery(shopper_id: str, subscription_id: str) -> dict:
    """Skip the next delivery of an active subscription; the one after comes one interval later.

    Skips close 2 days before the delivery date.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        subscription_id: The subscription's id, e.g. "SUB-000007".
    """
    active_shopper(shopper_id)
    sub = owned_subscription(shopper_id, subscription_id)
    if sub["status"] != "active":
        raise ToolError(f"subscription {subscription_id} is {sub['status']}; only active subscriptions can skip")
    days = clock.days_between(clock.today(), sub["next_delivery"])
    if days <= SKIP_CUTOFF_DAYS:
        raise ToolError(f"the delivery on {sub['next_delivery']} is already being packed; skips close "
                        f"{SKIP_CUTOFF_DAYS} days before delivery")
    new_date = clock.add_days(sub["next_delivery"], 7 * sub["interval_weeks"])
    db.update("subscriptions", subscription_id, {"next_delivery": new_date})
    return {"subscription_id": subscription_id, "skipped_delivery": sub["next_delivery"], "next_delivery": new_date}


@tool("write")
def cancel_subscription(shopper_id: str, subscription_id: str) -> dict:
    """Cancel an active or paused subscription. A delivery within the next 2 days still ships.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        subscription_id: The subscription's id, e.g. "SUB-000007".
    """
    verified_shopper(shopper_id)
    sub = owned_subscription(shopper_id, subscription_id)
    if sub["status"] == "cancelled":
        raise ToolError(f"subscription {subscription_id} is already cancelled")
    still_ships = sub["status"] == "active" and clock.days_between(clock.today(), sub["next_delivery"]) <= SKIP_CUTOFF_DAYS
    db.update("subscriptions", subscription_id, {"status": "cancelled"})
    return {"subscription_id": subscription_id, "status": "cancelled",
            "final_delivery": sub["next_delivery"] if still_ships else None}


@tool("write")
def leave_seller_review(shopper_id: str, parcel_id: str, stars: int, comment: str) -> dict:
    """Review the seller of a delivered parcel (1 to 5 stars), once per parcel, within 60 days of delivery.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        parcel_id: The delivered parcel's id, e.g. "PCL-000118".
        stars: Rating from 1 to 5, e.g. 4.
        comment: A short comment, e.g. "Well packed and quick."
    """
    active_shopper(shopper_id)
    parcel = owned_parcel(shopper_id, parcel_id)
    if parcel["status"] != "delivered":
        raise ToolError(f"parcel {parcel_id} is {parcel['status']}; sellers can be reviewed after delivery")
    if parcel["reviewed"] or db.find("reviews", {"parcel_id": parcel_id}):
        raise ToolError(f"the seller was already reviewed for parcel {parcel_id}")
    if clock.days_between(parcel["delivery_date"], clock.today()) > REVIEW_WINDOW_DAYS:
        raise ToolError(f"parcel {parcel_id} was delivered on {parcel['delivery_date']}; reviews close "
                        f"{REVIEW_WINDOW_DAYS} days after delivery")
    if stars < 1 or stars > 5:
        raise ToolError("stars must be between 1 and 5")
    text = comment.strip()
    if not text or len(text) > 500:
        raise ToolError("the comment must have 1 to 500 characters")
    listing = db.get("listings", parcel["listing_id"])
    seller = db.get("sellers", listing["seller_id"])
    count = seller["review_count"] + 1
    rating = round((seller["rating"] * seller["review_count"] + stars) / count, 2)
    db.update("sellers", seller["seller_id"], {"rating": rating, "review_count": count})
    db.update("parcels", parcel_id, {"reviewed": True})
    review = db.insert("reviews", {"parcel_id": parcel_id, "seller_id": seller["seller_id"],
                                   "shopper_id": shopper_id, "stars": stars, "comment": text,
                                   "posted_on": clock.today()})
    return {"review_id": review["review_id"], "seller": seller["name"], "stars": stars, "seller_rating": rating,
            "review_count": count}


@tool("write")
def update_loyalty_preferences(shopper_id: str,
                               reward_mode: Literal["points", "wallet_cashback", "charity"] | None = None,
                               marketing_emails: bool | None = None) -> dict:
    """Change how a verified shopper's rewards are paid out and whether they get marketing emails.

    Reward modes: points (earn points), wallet_cashback (2% back into the wallet; gold and platinum only),
    charity (points are donated). The reward mode can change once every 90 days.

    Args:
        shopper_id: The shopper's id, e.g. "SHO-000042".
        reward_mode: The new reward mode, e.g. "wallet_cashback".
        marketing_emails: Whether to receive marketing emails, e.g. false.
    """
    shopper = active_shopper(shopper_id)
    changes = {}
    if reward_mode is not None:
        if reward_mode == shopper["reward_mode"]:
            raise ToolError(f"the reward mode is already {reward_mode}")
        if reward_mode == "wallet_cashback" and shopper["loyalty_tier"] not in CASHBACK_TIERS:
            raise ToolError("wallet cashback is only for gold and platinum members")
        last = shopper["reward_mode_changed_on"]
        if last and clock.days_between(last, clock.today()) < REWARD_MODE_COOLDOWN_DAYS:
            raise ToolError(f"the reward mode was changed on {last}; it can change again on "
                            f"{clock.add_days(last, REWARD_MODE_COOLDOWN_DAYS)}")
        changes["reward_mode"] = reward_mode
        changes["reward_mode_changed_on"] = clock.today()
    if marketing_emails is not None and marketing_emails != shopper["marketing_emails"]:
        changes["marketing_emails"] = marketing_emails
    if not changes:
        raise ToolError("nothing to change")
    updated = db.update("shoppers", shopper_id, changes)
    return {"shopper_id": shopper_id, "reward_mode": updated["reward_mode"],
            "reward_mode_changed_on": updated["reward_mode_changed_on"],
            "marketing_emails": updated["marketing_emails"]}


@tool("write")
def transfer_to_human_agents(reason: Literal["high_value_claim", "other"], summary: str | None = None) -> dict:
    """Hand the shopper over to a human agent, when the policy says a request is theirs to handle.

    Args:
        reason: Why the shopper is handed over, e.g. "high_value_claim".
        summary: A short note of the request for the human agent, e.g. "lost parcel worth 120.00 EUR".
    """
    handoff = db.insert("handoffs", {"reason": reason, "requested_at": clock.now()})
    return {"handoff_id": handoff["handoff_id"], "status": "transferred", "reason": reason}
