"""Where ``cost`` gets its prices: the catalog's dated table, or the AWS Price List API.

The table is the default, so ``cost`` runs offline. ``--live-prices`` asks the Price List API
(``pricing:GetProducts``) for the EC2 on-demand Linux price of every instance type the estimate
uses, in the environment's Region. SageMaker ``ml.*`` prices always come from the table.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from cdk_neuron import catalog
from cdk_neuron.catalog import Price

# The Price List query API is served from a few Regions only; us-east-1 answers for every Region.
PRICING_API_REGION = "us-east-1"
LIVE_SOURCE = "AWS Price List API"


@dataclass(frozen=True)
class PriceBook:
    """Prices by instance name; ``live`` overrides the catalog for EC2 types."""

    live: Mapping[str, Price] = field(default_factory=dict)
    live_date: str | None = None

    def ec2(self, instance_type: str) -> Price | None:
        return self.live.get(instance_type) or catalog.ON_DEMAND_PRICES.get(instance_type)

    def sagemaker(self, instance_type: str) -> Price | None:
        return catalog.SAGEMAKER_PRICES.get(f"ml.{instance_type.removeprefix('ml.')}")

    def instance(self, instance_type: str, *, sagemaker: bool = False) -> Price | None:
        return self.sagemaker(instance_type) if sagemaker else self.ec2(instance_type)

    @property
    def date(self) -> str:
        return self.live_date or catalog.PRICES_DATE


def _filters(instance_type: str, region: str) -> list[dict[str, str]]:
    terms = {
        "instanceType": instance_type,
        "regionCode": region,
        "operatingSystem": "Linux",
        "tenancy": "Shared",
        "preInstalledSw": "NA",
        "capacitystatus": "Used",
        "licenseModel": "No License required",
    }
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in terms.items()]


def _on_demand_usd(price_list_item: str) -> float | None:
    product: dict[str, Any] = json.loads(price_list_item)
    for term in product.get("terms", {}).get("OnDemand", {}).values():
        for dimension in term.get("priceDimensions", {}).values():
            usd = dimension.get("pricePerUnit", {}).get("USD")
            if usd is not None and dimension.get("unit", "Hrs") == "Hrs" and float(usd) > 0:
                return float(usd)
    return None


def live_price_book(pricing: Any, region: str, instance_types: Iterable[str]) -> PriceBook:
    """Look up each type's on-demand Linux price in ``region``; types without a price keep the table's."""
    today = date.today().isoformat()
    live: dict[str, Price] = {}
    for instance_type in sorted(set(instance_types)):
        response = pricing.get_products(
            ServiceCode="AmazonEC2", Filters=_filters(instance_type, region), MaxResults=10
        )
        for item in response.get("PriceList", []):
            usd = _on_demand_usd(item)
            if usd is not None:
                live[instance_type] = Price(usd, region, LIVE_SOURCE, f"retrieved {today}")
                break
    return PriceBook(live=live, live_date=today)
