"""Where ``cost`` gets its prices: the catalog's dated tables, or the AWS Price List API.

The tables are the default, so ``cost`` runs offline. Most of their figures are us-east-1 prices:
``cost`` says which lines apply a us-east-1 price to another Region (:meth:`PriceBook.regional`).

``--live-prices`` asks the Price List API (``pricing:GetProducts``) for every line, in the
environment's Region: EC2 instances (on-demand Linux, shared tenancy), SageMaker hosting instances,
NAT gateway hours, public IPv4 addresses, interface endpoint hours, the load balancer, EFS Standard
and One Zone storage, S3 Standard storage, KMS keys, CloudWatch alarms and dashboards. A line the
API does not price keeps the table's price, and says so.

SageMaker HyperPod instances (``--live-prices`` only: no table holds them) are the
``AmazonSageMaker`` products of the instance (``instanceName``, ``regionCode``) whose ``component``,
usage type or operation names a cluster or HyperPod; the Price List's attribute values for HyperPod
are not in any page we could read, so cdk-neuron matches on those words, names the usage type it
took in the price's note, and leaves the line unpriced when no product matches. HyperPod sells the
instances at its own rates, not EC2's ("Amazon SageMaker pricing", HyperPod tab,
https://aws.amazon.com/sagemaker/pricing/, read 2026-12-02).

Products are found with ``TERM_MATCH`` on ``regionCode`` (and a product family or instance where
that pins them) plus ``CONTAINS`` on the usage type; the product is then chosen by the exact usage
type (``NatGateway-Hours``, ``USW2-NatGateway-Hours`` elsewhere) and the unit of its price
dimension. The usage types are those the public price files use, as open-source cost tools query
them (infracost's AWS resources, for example ``NatGateway-Hours`` and ``LoadBalancerUsage`` with the
``Load Balancer-Application`` family; SageMaker ``ML Instance`` products with ``component`` Hosting).
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
_MAX_PAGES = 10


@dataclass(frozen=True)
class ServiceQuery:
    """How one service price is found: the product filters, the usage type and the price unit."""

    service_code: str
    usage_type: str
    """Without the Region prefix (``NatGateway-Hours``); matched exactly or after ``<PREFIX>-``."""
    unit: str | None
    """The price dimension's unit (``Hrs``, ``GB-Mo``); None accepts any."""
    product_family: str | None = None


# Keys are catalog.SERVICE_PRICES keys (efs_one_zone_gb_month has no table price: the table prices
# One Zone at the Standard rate).
SERVICE_QUERIES: dict[str, ServiceQuery] = {
    "nat_gateway_hour": ServiceQuery("AmazonEC2", "NatGateway-Hours", "Hrs", "NAT Gateway"),
    "public_ipv4_hour": ServiceQuery("AmazonVPC", "PublicIPv4:InUseAddress", "Hrs"),
    "interface_endpoint_az_hour": ServiceQuery("AmazonVPC", "VpcEndpoint-Hours", "Hrs"),
    "alb_hour": ServiceQuery("AWSELB", "LoadBalancerUsage", "Hrs", "Load Balancer-Application"),
    "efs_standard_gb_month": ServiceQuery("AmazonEFS", "TimedStorage-ByteHrs", "GB-Mo"),
    "efs_one_zone_gb_month": ServiceQuery("AmazonEFS", "TimedStorage-Z-ByteHrs", "GB-Mo"),
    "s3_standard_gb_month": ServiceQuery("AmazonS3", "TimedStorage-ByteHrs", "GB-Mo"),
    # Monthly prices: the unit must say so, or an hourly dimension would be taken for a monthly one.
    "kms_key_month": ServiceQuery("awskms", "KMS-Keys", "Keys"),
    "alarm_month": ServiceQuery("AmazonCloudWatch", "CW:AlarmMonitorUsage", "Alarms"),
    "dashboard_month": ServiceQuery("AmazonCloudWatch", "DashboardsUsageHour", "Dashboards"),
}


@dataclass(frozen=True)
class PriceBook:
    """Prices for one environment: live ones where looked up, else the catalog's tables."""

    live: Mapping[str, Price] = field(default_factory=dict)
    """EC2 instance prices by type."""
    live_date: str | None = None
    live_sagemaker: Mapping[str, Price] = field(default_factory=dict)
    """SageMaker hosting prices by ``ml.`` name."""
    live_services: Mapping[str, Price] = field(default_factory=dict)
    """Service prices by :data:`SERVICE_QUERIES` key."""
    live_hyperpod: Mapping[str, Price] = field(default_factory=dict)
    """SageMaker HyperPod cluster prices by ``ml.`` name (no table: live only)."""

    def ec2(self, instance_type: str) -> Price | None:
        return self.live.get(instance_type) or catalog.ON_DEMAND_PRICES.get(instance_type)

    def sagemaker(self, instance_type: str) -> Price | None:
        name = f"ml.{instance_type.removeprefix('ml.')}"
        return self.live_sagemaker.get(name) or catalog.SAGEMAKER_PRICES.get(name)

    def hyperpod(self, instance_type: str) -> Price | None:
        """A HyperPod cluster instance's price; None unless ``--live-prices`` found one."""
        return self.live_hyperpod.get(f"ml.{instance_type.removeprefix('ml.')}")

    def instance(self, instance_type: str, *, sagemaker: bool = False) -> Price | None:
        return self.sagemaker(instance_type) if sagemaker else self.ec2(instance_type)

    def service(self, key: str) -> Price | None:
        """A service price; None only for a key without a table price and no live one."""
        return self.live_services.get(key) or catalog.SERVICE_PRICES.get(key)

    @property
    def is_live(self) -> bool:
        return self.live_date is not None

    @property
    def date(self) -> str:
        return self.live_date or catalog.PRICES_DATE


def regional(price: Price | None, region: str) -> bool:
    """Whether ``price`` is a price for ``region``.

    Live prices are; table prices are for their own Region, and the Neuron instance prices also for
    the Regions :data:`catalog.SAME_PRICE_REGIONS` lists (SkyPilot's catalog shows the same figures).
    """
    if price is None or price.region == region:
        return True
    return price.source == "KARP" and {price.region, region} <= catalog.SAME_PRICE_REGIONS


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


def _sagemaker_filters(name: str, region: str) -> list[dict[str, str]]:
    terms = {"instanceName": name, "regionCode": region, "component": "Hosting"}
    return [{"Type": "TERM_MATCH", "Field": k, "Value": v} for k, v in terms.items()]


def _service_filters(query: ServiceQuery, region: str) -> list[dict[str, str]]:
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
    if query.product_family:
        filters.append({"Type": "TERM_MATCH", "Field": "productFamily", "Value": query.product_family})
    filters.append({"Type": "CONTAINS", "Field": "usagetype", "Value": query.usage_type})
    return filters


def _usage_type_matches(usage_type: str, wanted: str) -> bool:
    """``NatGateway-Hours`` (us-east-1) or ``USW2-NatGateway-Hours``; not ``IATimedStorage-ByteHrs``."""
    return usage_type == wanted or usage_type.endswith(f"-{wanted}")


def _on_demand_usd(product: dict[str, Any], unit: str | None = "Hrs") -> float | None:
    """The first positive on-demand price of the product's lowest tier in ``unit``."""
    dimensions = [
        dimension
        for term in product.get("terms", {}).get("OnDemand", {}).values()
        for dimension in term.get("priceDimensions", {}).values()
    ]
    dimensions.sort(key=lambda d: float(d.get("beginRange", "0") or 0))
    for dimension in dimensions:
        usd = dimension.get("pricePerUnit", {}).get("USD")
        if usd is None or float(usd) <= 0:
            continue
        if unit is None or dimension.get("unit", unit) == unit:
            return float(usd)
    return None


def _products(pricing: Any, service_code: str, filters: list[dict[str, str]]) -> list[dict[str, Any]]:
    products: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ServiceCode": service_code, "Filters": filters, "MaxResults": 100}
    for _ in range(_MAX_PAGES):
        response = pricing.get_products(**kwargs)
        products += [json.loads(item) for item in response.get("PriceList", [])]
        if not response.get("NextToken"):
            break
        kwargs["NextToken"] = response["NextToken"]
    return products


def _instance_price(pricing: Any, service_code: str, filters: list[dict[str, str]]) -> float | None:
    response = pricing.get_products(ServiceCode=service_code, Filters=filters, MaxResults=10)
    for item in response.get("PriceList", []):
        usd = _on_demand_usd(json.loads(item))
        if usd is not None:
            return usd
    return None


def _service_price(pricing: Any, query: ServiceQuery, region: str) -> float | None:
    for product in _products(pricing, query.service_code, _service_filters(query, region)):
        usage_type = str(product.get("product", {}).get("attributes", {}).get("usagetype", ""))
        if not _usage_type_matches(usage_type, query.usage_type):
            continue
        usd = _on_demand_usd(product, query.unit)
        if usd is not None:
            return usd
    return None


_HYPERPOD_WORDS = ("hyperpod", "cluster")


def _hyperpod_price(pricing: Any, name: str, region: str) -> tuple[float, str] | None:
    """The hourly on-demand price of ``name`` in a HyperPod cluster, and the usage type it came from."""
    filters = [
        {"Type": "TERM_MATCH", "Field": "instanceName", "Value": name},
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
    ]
    for product in _products(pricing, "AmazonSageMaker", filters):
        attributes = product.get("product", {}).get("attributes", {})
        label = " ".join(str(attributes.get(k, "")) for k in ("component", "usagetype", "operation")).lower()
        if not any(word in label for word in _HYPERPOD_WORDS):
            continue
        usd = _on_demand_usd(product)
        if usd is not None:
            return usd, str(attributes.get("usagetype", "?"))
    return None


def live_price_book(
    pricing: Any,
    region: str,
    instance_types: Iterable[str],
    *,
    sagemaker_types: Iterable[str] = (),
    services: Iterable[str] = (),
    hyperpod_types: Iterable[str] = (),
) -> PriceBook:
    """Look up every price the estimate uses in ``region``; what the API does not price keeps the table's.

    Service prices are returned per unit-hour for ``_hour`` keys and per unit-month for ``_month``
    keys, as the catalog's table holds them.
    """
    today = date.today().isoformat()
    note = f"retrieved {today}"
    live: dict[str, Price] = {}
    for instance_type in sorted(set(instance_types)):
        usd = _instance_price(pricing, "AmazonEC2", _filters(instance_type, region))
        if usd is not None:
            live[instance_type] = Price(usd, region, LIVE_SOURCE, note)
    sagemaker: dict[str, Price] = {}
    for instance_type in sorted(set(sagemaker_types)):
        name = f"ml.{instance_type.removeprefix('ml.')}"
        usd = _instance_price(pricing, "AmazonSageMaker", _sagemaker_filters(name, region))
        if usd is not None:
            sagemaker[name] = Price(usd, region, LIVE_SOURCE, note)
    service_prices: dict[str, Price] = {}
    for key in sorted(set(services)):
        query = SERVICE_QUERIES[key]
        usd = _service_price(pricing, query, region)
        if usd is not None:
            service_prices[key] = Price(usd, region, LIVE_SOURCE, note)
    hyperpod: dict[str, Price] = {}
    for instance_type in sorted(set(hyperpod_types)):
        name = f"ml.{instance_type.removeprefix('ml.')}"
        found = _hyperpod_price(pricing, name, region)
        if found is not None:
            hyperpod[name] = Price(found[0], region, LIVE_SOURCE, f"{note}; usage type {found[1]}")
    return PriceBook(
        live=live,
        live_date=today,
        live_sagemaker=sagemaker,
        live_services=service_prices,
        live_hyperpod=hyperpod,
    )


__all__ = [
    "LIVE_SOURCE",
    "PRICING_API_REGION",
    "SERVICE_QUERIES",
    "PriceBook",
    "live_price_book",
    "regional",
]
